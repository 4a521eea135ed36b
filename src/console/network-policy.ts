/**
 * The agent's network policy (`runtime.sandbox.network`) as the console edits it: a mode, and
 * for an allowlist a text of entries, one a line. The server normalises and validates the
 * entries; this module only splits the text and maps the server's errors back to lines. Pure.
 */
import { ApiError, type FieldProblem } from './api.js';
import type { NetworkMode, NetworkPolicy } from './types.js';

/** Where the policy sits in an agent configuration (and in the server's field errors). */
export const NETWORK_PATH = 'runtime.sandbox.network';

/** The modes in the order the editor offers them, with their labels. */
export const NETWORK_MODES: ReadonlyArray<{ value: NetworkMode; label: string }> = [
  { value: 'none', label: 'No network' },
  { value: 'packages', label: 'Package index only' },
  { value: 'allowlist', label: 'Allowlist' },
];

/** The network fields of the editor. `allowText` is kept while another mode is chosen. */
export interface NetworkEdits {
  mode: NetworkMode;
  allowText: string;
}

/** An allowlist's entries, and the (1-based) line of the text each came from. */
export interface AllowEntries {
  entries: string[];
  lines: number[];
}

/**
 * One entry per non-empty line, trimmed.
 *
 * @example
 * parseAllowText('api.example.com\n\n  *.example.org ');
 * // { entries: ['api.example.com', '*.example.org'], lines: [1, 3] }
 */
export function parseAllowText(text: string): AllowEntries {
  const entries: string[] = [];
  const lines: number[] = [];
  text.split(/\r\n|\r|\n/).forEach((line, index) => {
    const entry = line.trim();
    if (entry === '') return;
    entries.push(entry);
    lines.push(index + 1);
  });
  return { entries, lines };
}

/** The editor's fields for a stored policy; absent means `none`. */
export function networkEditsOf(policy: NetworkPolicy | undefined): NetworkEdits {
  if (policy === undefined) return { mode: 'none', allowText: '' };
  return { mode: policy.mode, allowText: policy.mode === 'allowlist' ? policy.allow.join('\n') : '' };
}

/** The policy the editor's fields stand for. */
export function networkPolicyOf(edits: NetworkEdits): NetworkPolicy {
  if (edits.mode === 'allowlist') return { mode: 'allowlist', allow: parseAllowText(edits.allowText).entries };
  return { mode: edits.mode };
}

/** A save's failure split in two: the network policy's problems, said beside its control, and the rest. */
export interface SplitProblems {
  /** One readable line per problem of the network policy, entries named by their line. */
  network: string[];
  /** What to show in the form's alert: the error itself, or a summary when the problems are all shown beside the control. */
  rest: unknown;
}

/** The line of a field error `runtime.sandbox.network.allow.<index>`, read through `sent`. */
function describeNetworkProblem(problem: FieldProblem, sent: AllowEntries): string {
  const rest = problem.path.slice(NETWORK_PATH.length).replace(/^\./, '');
  const entry = /^allow\.(\d+)$/.exec(rest);
  if (entry) {
    const line = sent.lines[Number(entry[1])];
    return line === undefined ? problem.message : `Line ${line}: ${problem.message}`;
  }
  if (rest === 'allow') return `The allowlist ${problem.message}`;
  return problem.message;
}

function isNetworkPath(path: string): boolean {
  return path === NETWORK_PATH || path.startsWith(`${NETWORK_PATH}.`);
}

/**
 * Separates the network policy's field errors of a failed save from the others. `sent` is the
 * allowlist as it was sent, so that `allow.<index>` names the line the entry came from.
 */
export function splitNetworkProblems(error: unknown, sent: AllowEntries): SplitProblems {
  if (!(error instanceof ApiError)) return { network: [], rest: error };
  const network = error.fieldErrors.filter((problem) => isNetworkPath(problem.path));
  if (network.length === 0) return { network: [], rest: error };
  const others = error.fieldErrors.filter((problem) => !isNetworkPath(problem.path));
  const summary =
    network.length === 1
      ? 'The draft was not saved: the network setting has a problem.'
      : `The draft was not saved: the network setting has ${network.length} problems.`;
  const rest = others.length === 0 ? summary : new ApiError(error.status, error.code, summary, error.requestId, others);
  return { network: network.map((problem) => describeNetworkProblem(problem, sent)), rest };
}
