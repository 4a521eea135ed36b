import { AbstractChat, type ChatInit, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from 'ai';

/** The plain in-memory state a UI framework's binding would otherwise provide. */
class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[];
  private readonly onChange: ((messages: UIMessage[]) => void) | undefined;

  constructor(messages: UIMessage[] = [], onChange?: (messages: UIMessage[]) => void) {
    this.messages = messages;
    this.onChange = onChange;
  }

  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
    this.onChange?.(this.messages);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
    this.onChange?.(this.messages);
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The AI SDK's own chat client (what `useChat` wraps), with in-memory state. */
export class SdkChat extends AbstractChat<UIMessage> {
  /** `onMessages` sees the messages each time a chunk changed them (what a UI would render). */
  constructor(
    init: Omit<ChatInit<UIMessage>, 'messages'> & {
      messages?: UIMessage[];
      onMessages?: (messages: UIMessage[]) => void;
    },
  ) {
    const { messages, onMessages, ...rest } = init;
    super({ ...rest, state: new MemoryChatState(messages, onMessages) });
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
  onMessages?: (messages: UIMessage[]) => void;
}): SdkChat {
  return new SdkChat({
    id: options.id,
    transport: new DefaultChatTransport({ api: options.api, headers: options.headers ?? {} }),
    ...(options.onFinish ? { onFinish: options.onFinish } : {}),
    ...(options.onMessages ? { onMessages: options.onMessages } : {}),
  });
}
