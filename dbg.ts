import { Readable } from 'node:stream';
import { createDockerBackend } from './src/sandbox/docker/docker-backend.js';
const b = createDockerBackend({ image: 'mordn-sandbox:latest' });
const ws = 'ws_dbg' + Math.random().toString(16).slice(2, 14);
await b.ensureWorkspace(ws);
const w = async (content: string, exclusive = false) => {
  try { console.log(await b.writeFile(ws, 'replace.txt', Readable.from([Buffer.from(content)]), { maxBytes: 1 << 20, exclusive })); } catch (e) { console.log('ERR', String(e)); }
};
await w('a much longer first version'); await w('short'); await w('other', true); await w('other', true);
await b.removeWorkspace(ws);
process.exit(0);
