import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { OPENAPI_FILE } from '../routes/docs.js';
import { renderOpenApiDocument } from '../src/openapi-document.js';
import { packageRoot } from '../src/package-root.js';

const target = path.join(packageRoot(), OPENAPI_FILE);
await writeFile(target, await renderOpenApiDocument());
process.stdout.write(`Wrote ${path.relative(process.cwd(), target)}\n`);
