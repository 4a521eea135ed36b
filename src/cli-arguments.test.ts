import { describe, expect, it } from 'vitest';
import { parseCommandLine } from './cli-arguments.js';

describe('parseCommandLine', () => {
  it.each([
    [[], { kind: 'run', command: 'serve', json: false }],
    [['serve'], { kind: 'run', command: 'serve', json: false }],
    [['init'], { kind: 'run', command: 'init', json: false }],
    [['init', '--json'], { kind: 'run', command: 'init', json: true }],
    [['migrate'], { kind: 'run', command: 'migrate', json: false }],
    [['init', '--', '--json'], { kind: 'error', message: 'mordn init takes no arguments (got "--json").' }],
  ])('reads %o', (argv, expected) => {
    expect(parseCommandLine(argv)).toEqual(expected);
  });

  it.each([
    [['serve', '--help']],
    [['serve', '-h']],
    [['init', '--help']],
    [['init', '--json', '--help']],
    [['migrate', '-h']],
  ])('%o asks for that command’s help, never to run it', (argv) => {
    expect(parseCommandLine(argv)).toEqual({
      kind: 'help',
      text: expect.stringContaining(`Usage: mordn ${argv[0]}`),
    });
  });

  it.each([[['--help']], [['-h']], [['help']], [['help', 'bogus']]])('%o prints the general usage', (argv) => {
    expect(parseCommandLine(argv)).toEqual({ kind: 'help', text: expect.stringContaining('Usage: mordn <command>') });
  });

  it('reads --version', () => {
    expect(parseCommandLine(['--version'])).toEqual({ kind: 'version' });
  });

  it.each([
    [['init', '--jsno'], 'Unknown option "--jsno" for mordn init.'],
    [['init', '-j'], 'Unknown option "-j" for mordn init.'],
    [['serve', '--json'], 'Unknown option "--json" for mordn serve.'],
    [['serve', '--port=9000'], 'Unknown option "--port" for mordn serve.'],
    [['serve', '--help', '--verbose'], 'Unknown option "--verbose" for mordn serve.'],
    [['migrate', '--force'], 'Unknown option "--force" for mordn migrate.'],
    [['init', '--json=yes'], 'The option "--json" takes no value (got "yes").'],
    [['init', 'now'], 'mordn init takes no arguments (got "now").'],
    [['--port', '80'], 'Unknown option "--port".'],
    [['start'], 'Unknown command "start".'],
    [['--version', 'extra'], '--version takes no arguments.'],
  ])('refuses %o naming what is wrong', (argv, message) => {
    expect(parseCommandLine(argv)).toEqual({ kind: 'error', message });
  });
});
