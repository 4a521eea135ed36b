/**
 * The fields of a `/proc/<pid>/stat` line after the command name, which may itself hold spaces
 * and parentheses: index 0 is the state, 1 the parent pid, and field N of proc(5) is index N - 3
 * (utime 11, stime 12, nice 16, starttime 19).
 *
 * @example
 * const [state, parent] = procStatFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
 */
export function procStatFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
