import { AbstractChat, type ChatInit, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from 'ai';

/** The plain in-memory state a UI framework's binding would otherwise provide. */
class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[];

  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }

  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The AI SDK's own chat client (what `useChat` wraps), with in-memory state. */
export class SdkChat extends AbstractChat<UIMessage> {
  constructor(init: Omit<ChatInit<UIMessage>, 'messages'> & { messages?: UIMessage[] }) {
    const { messages, ...rest } = init;
    super({ ...rest, state: new MemoryChatState(messages) });
  }
}

/**
 * An `SdkChat` that talks to `api` over HTTP with `DefaultChatTransport`, sending `headers` (an
 * agent key and user for the service, nothing for a host app).
 *
 * @example
 * const chat = sdkChat({ id: 'c1', api: `${service.url}/v1/chat`, headers: agentHeaders(key, 'alice') });
 * await chat.sendMessage({ text: 'hello' });
 */
export function sdkChat(options: {
  id: string;
  api: string;
  headers?: Record<string, string>;
  onFinish?: ChatInit<UIMessage>['onFinish'];
}): SdkChat {
  return new SdkChat({
    id: options.id,
    transport: new DefaultChatTransport({ api: options.api, headers: options.headers ?? {} }),
    ...(options.onFinish ? { onFinish: options.onFinish } : {}),
  });
}
