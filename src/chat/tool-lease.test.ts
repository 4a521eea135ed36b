import { describe, expect, it } from 'vitest';
import { createToolLease } from './tool-lease.js';
import type { BuiltTools } from './types.js';

function countingTools() {
  const counter = { closes: 0 };
  const tools: BuiltTools = {
    tools: {},
    close: async () => {
      counter.closes += 1;
    },
  };
  return { tools, counter };
}

describe('createToolLease', () => {
  it('closes a held connection exactly once, however often release is called', async () => {
    const { tools, counter } = countingTools();
    const lease = createToolLease(new AbortController().signal);
    await lease.hold(Promise.resolve(tools));
    await Promise.all([lease.release(), lease.release()]);
    await lease.release();
    expect(counter.closes).toBe(1);
  });

  it('gives up on abort and closes a connection that arrives late', async () => {
    const { tools, counter } = countingTools();
    const controller = new AbortController();
    const lease = createToolLease(controller.signal);
    let arrive: (value: BuiltTools) => void = () => undefined;
    const opening = new Promise<BuiltTools>((resolve) => {
      arrive = resolve;
    });
    const holding = lease.hold(opening);
    controller.abort(new Error('client went away'));
    await expect(holding).rejects.toThrow('client went away');
    await lease.release();
    expect(counter.closes).toBe(0);
    arrive(tools);
    await new Promise((resolve) => setImmediate(resolve));
    expect(counter.closes).toBe(1);
    await lease.release();
    expect(counter.closes).toBe(1);
  });

  it('closes a connection arriving after release', async () => {
    const { tools, counter } = countingTools();
    const lease = createToolLease(new AbortController().signal);
    await lease.release();
    await lease.hold(Promise.resolve(tools)).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(counter.closes).toBe(1);
  });

  it('passes a setup failure through without anything to close', async () => {
    const lease = createToolLease(new AbortController().signal);
    await expect(lease.hold(Promise.reject(new Error('discovery failed')))).rejects.toThrow('discovery failed');
    await lease.release();
  });
});
