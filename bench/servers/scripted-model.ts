import type { ChatCompletionRequest, ModelTurn } from '../../test/support/scripted-model-server.js';
import { startScriptedModelServer } from '../../test/support/scripted-model-server.js';
import { scriptedAnswer } from '../load-script.js';

function lastUserText(request: ChatCompletionRequest): string {
  const users = request.messages.filter((message) => message.role === 'user');
  return JSON.stringify(users.at(-1)?.content ?? '');
}

/** Tool results since the last user message: which step of a scripted tool-calling turn this is. */
function toolResults(request: ChatCompletionRequest): number {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  return request.messages.slice(lastUser).filter((message) => message.role === 'tool').length;
}

/**
 * The scripted OpenAI-compatible model in a process of its own (so streaming 20,000 deltas a second
 * costs neither the service's core nor the load generator's event loop), answering each request
 * as `bench/load-script.ts` reads it from the last user message. Prints `{"port":…}` once listening.
 */
const model = await startScriptedModelServer(
  (request): ModelTurn => scriptedAnswer(lastUserText(request), toolResults(request)),
);
process.stderr.write(`${JSON.stringify({ port: Number(new URL(model.baseUrl).port) })}\n`);
process.once('SIGTERM', () => {
  void model.close().finally(() => process.exit(0));
});
