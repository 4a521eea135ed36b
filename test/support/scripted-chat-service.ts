import type { AgentConfig } from '../../src/agents/config-schema.js';
import { type AgentFixture, createAgentFixture } from './fixtures.js';
import { type ModelScript, type ScriptedModelServer, startScriptedModelServer } from './scripted-model-server.js';
import { type StartTestServiceOptions, startTestService, type TestService } from './service.js';

/** The published config the agent gets unless told otherwise: managed sandboxes on, nothing else. */
export const SANDBOX_ENABLED_CONFIG: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };

export interface ScriptedChatServiceOptions extends Omit<StartTestServiceOptions, 'environment'> {
  /** Extra environment variables, added to (and able to override) the sandbox and model settings. */
  environment?: Record<string, string>;
  /** The agent's published config; {@link SANDBOX_ENABLED_CONFIG} by default. */
  published?: AgentConfig;
}

export interface ScriptedChatService {
  /** The scripted OpenAI-compatible model the service chats with. */
  model: ScriptedModelServer;
  /** The service, with managed sandboxes switched on and `model` as its model. */
  service: TestService;
  /** An agent whose config `published` is published. */
  fixture: AgentFixture;
  /** Closes the service, then the model. */
  close(): Promise<void>;
}

/**
 * A service that chats for real: a scripted model server, a test service with managed sandboxes on
 * (`MORDN_SANDBOX_ENABLED`) whose model is that server (`openai-compatible:scripted-1`), and an
 * agent with a published config, sandboxes enabled by default.
 *
 * @example
 * let model: ScriptedModelServer;
 * let service: TestService;
 * let fixture: AgentFixture;
 * let close: () => Promise<void>;
 * beforeAll(async () => {
 *   ({ model, service, fixture, close } = await startScriptedChatService(() => ({ text: 'Hi.' }), {
 *     environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
 *   }));
 * });
 * afterAll(() => close());
 */
export async function startScriptedChatService(
  script: ModelScript,
  options: ScriptedChatServiceOptions = {},
): Promise<ScriptedChatService> {
  const { environment, published = SANDBOX_ENABLED_CONFIG, ...serviceOptions } = options;
  const model = await startScriptedModelServer(script);
  let service: TestService | undefined;
  const close = async () => {
    await service?.close();
    await model.close();
  };
  try {
    service = await startTestService({
      ...serviceOptions,
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_MODEL: 'openai-compatible:scripted-1',
        MORDN_MODEL_BASE_URL: model.baseUrl,
        ...environment,
      },
    });
    const fixture = await createAgentFixture(service.database.db, { published });
    return { model, service, fixture, close };
  } catch (error) {
    // Nothing is left listening when the setup itself fails.
    await close();
    throw error;
  }
}
