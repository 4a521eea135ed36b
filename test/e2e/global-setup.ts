import type { TestProject } from 'vitest/node';
import { preparePackagedExample } from './support/packaged-example.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The packed library installed into a built copy of examples/nextjs (see preparePackagedExample). */
    exampleDir: string;
  }
}

/** One pack, install and `next build` for every test of the e2e project. */
export default async function setup(project: TestProject): Promise<void> {
  const example = await preparePackagedExample((message) => console.log(message));
  const steps = example.steps.map(({ step, ms }) => `${step} ${(ms / 1000).toFixed(1)} s`).join(', ');
  console.log(`example: ${example.reused ? 'reused' : 'built'} ${example.dir} (${steps})`);
  project.provide('exampleDir', example.dir);
}
