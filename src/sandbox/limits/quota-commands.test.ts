import { describe, expect, it } from 'vitest';
import { CommandError, mkfsArguments, runCommand } from './quota-commands.js';
import { planQuotaLayout } from './quota-layout.js';

const MIB = 1024 ** 2;

describe('mkfsArguments', () => {
  it('names every feature and size, so no mke2fs.conf can change the layout', () => {
    const layout = planQuotaLayout(5 * MIB, 200);
    expect(mkfsArguments('/images/ws_1.ext4', layout, { uid: 65534, gid: 65534 })).toEqual([
      '-q',
      '-F',
      ...['-b', '4096'],
      ...['-I', '256'],
      ...['-N', '208'],
      ...['-g', '32768'],
      ...['-G', '16'],
      ...['-m', '0'],
      ...['-J', 'size=4'],
      ...[
        '-O',
        'none,has_journal,ext_attr,dir_index,filetype,extent,64bit,flex_bg,sparse_super,large_file,huge_file,dir_nlink,extra_isize,metadata_csum',
      ],
      ...['-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=65534:65534'],
      '/images/ws_1.ext4',
      '2348',
    ]);
  });

  it('asks for no journal where the layout has none', () => {
    const args = mkfsArguments('/images/ws_1.ext4', planQuotaLayout(2 * MIB, 1024), { uid: 0, gid: 0 });
    expect(args).not.toContain('-J');
    expect(args[args.indexOf('-O') + 1]).not.toContain('has_journal');
  });
});

describe('runCommand', () => {
  it('resolves with what the tool wrote', async () => {
    expect(await runCommand('echo', ['hello'], { timeoutMs: 5000 })).toBe('hello\n');
  });

  it('quotes the stderr of a tool that fails, with its exit status', async () => {
    const failure = runCommand('ls', ['/nonexistent-quota-path'], { timeoutMs: 5000 });
    await expect(failure).rejects.toBeInstanceOf(CommandError);
    await expect(failure).rejects.toThrow(
      /^ls \/nonexistent-quota-path failed \(exit 2\): .*No such file or directory/,
    );
  });

  it('names the package of a tool that is not installed', async () => {
    const failure = runCommand('mkfs.ext4-missing', [], { timeoutMs: 5000 });
    await expect(failure).rejects.toThrow('mkfs.ext4-missing is not installed (its package), or not on PATH');
    await expect(failure).rejects.toMatchObject({ missing: true });
  });

  it('kills a tool that outlives its timeout', async () => {
    await expect(runCommand('sleep', ['10'], { timeoutMs: 100 })).rejects.toThrow('sleep did not finish within 0.1 s');
  });
});
