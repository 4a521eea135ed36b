import { packagedSource } from '../runtime/packaged-source.js';

/** The source of `supervisor.py`, the program both backends run inside each workspace sandbox. */
export function supervisorSource(): Promise<Buffer> {
  return packagedSource('src/sandbox/supervisor/supervisor.py');
}
