import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3ToolResultOutput,
  SharedV3Warning,
} from '@ai-sdk/provider';

/**
 * A language model of the AI SDK's version 4 specification, as the providers of `ai@7` build it
 * (`@ai-sdk/openai@4`, `@ai-sdk/openai-compatible@3`, `ai/test`'s `MockLanguageModelV4`, …).
 *
 * Mordn runs its turns on `ai@6`, which speaks specification v3 and runs on every Node line the
 * service supports (`ai@7` needs Node 22). A host on the `ai@7` line hands its model to
 * `createChatHandler` as it is; `fromLanguageModelV4` translates between the two specifications
 * at the model's edge, so nothing else in the chat path knows which line the host is on.
 *
 * The calls take `unknown` on purpose: any v4 model is accepted without Mordn depending on the
 * v4 types package (which itself needs Node 22), and the translation below states which shapes
 * it reads.
 */
export interface LanguageModelV4 {
  readonly specificationVersion: 'v4';
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: PromiseLike<Record<string, RegExp[]>> | Record<string, RegExp[]>;
  doGenerate(options: unknown): PromiseLike<unknown>;
  doStream(options: unknown): PromiseLike<unknown>;
}

/** Version 4's file data: bytes (or base64), a URL, a provider's file reference, or text. */
type FileData =
  | { type: 'data'; data: Uint8Array | string }
  | { type: 'url'; url: URL }
  | { type: 'reference'; reference: Record<string, string> }
  | { type: 'text'; text: string };

type V3ToolResultContent = Extract<LanguageModelV3ToolResultOutput, { type: 'content' }>['value'][number];
type Parts<T> = T extends { content: infer C } ? (C extends Array<infer P> ? P : never) : never;

interface V4File {
  type: 'file';
  mediaType: string;
  data: FileData;
}

export function isLanguageModelV4(model: unknown): model is LanguageModelV4 {
  return (
    typeof model === 'object' &&
    model !== null &&
    (model as { specificationVersion?: unknown }).specificationVersion === 'v4'
  );
}

/**
 * `model` as a specification v3 model for `ai@6`: prompts go down in v4's shapes (file data as
 * `{ type: 'data' | 'url' }`, tool-result files as `file` parts), and what comes back is read in
 * v3's — parts v3 has no place for (custom content, reasoning files, pings, files given only by
 * URL) are left out, an `interrupted` finish is reported as `other`, and a `deprecated` warning
 * as `other`.
 */
export function fromLanguageModelV4(model: LanguageModelV4): LanguageModelV3 {
  const referenceKey = model.provider.split('.')[0] ?? model.provider;
  return {
    specificationVersion: 'v3',
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls;
    },
    async doGenerate(options) {
      const result = (await model.doGenerate(toV4CallOptions(options, referenceKey))) as LanguageModelV3GenerateResult;
      const warnings = result.warnings.map(toV3Warning);
      const content: LanguageModelV3Content[] = [];
      for (const part of result.content as unknown[]) {
        const converted = toV3Part(part);
        if (converted === undefined) warnings.push(leftOut(part));
        else content.push(converted as LanguageModelV3Content);
      }
      return { ...result, content, warnings, finishReason: toV3FinishReason(result.finishReason) };
    },
    async doStream(options) {
      const result = (await model.doStream(toV4CallOptions(options, referenceKey))) as LanguageModelV3StreamResult;
      const stream = (result.stream as ReadableStream<unknown>).pipeThrough(
        new TransformStream<unknown, LanguageModelV3StreamPart>({
          transform(part, controller) {
            const converted = toV3StreamPart(part);
            if (converted !== undefined) controller.enqueue(converted);
          },
        }),
      );
      return { ...result, stream };
    },
  };
}

function toV4CallOptions(options: LanguageModelV3CallOptions, referenceKey: string): unknown {
  return { ...options, prompt: options.prompt.map((message) => toV4Message(message, referenceKey)) };
}

function toV4Message(message: LanguageModelV3Message, referenceKey: string): unknown {
  if (message.role === 'system') return message;
  return {
    ...message,
    content: (message.content as Parts<LanguageModelV3Message>[]).map((part) => {
      if (part.type === 'file') {
        const data: FileData =
          part.data instanceof URL ? { type: 'url', url: part.data } : { type: 'data', data: part.data };
        return { ...part, data };
      }
      if (part.type === 'tool-result' && part.output.type === 'content') {
        return {
          ...part,
          output: { ...part.output, value: part.output.value.map((item) => toV4ToolResultContent(item, referenceKey)) },
        };
      }
      return part;
    }),
  };
}

function toV4ToolResultContent(item: V3ToolResultContent, referenceKey: string): unknown {
  const { providerOptions } = item;
  const file = (mediaType: string, data: FileData, filename?: string) => ({
    type: 'file',
    mediaType,
    data,
    ...(filename === undefined ? {} : { filename }),
    ...(providerOptions === undefined ? {} : { providerOptions }),
  });
  const reference = (fileId: string | Record<string, string>): FileData => ({
    type: 'reference',
    reference: typeof fileId === 'string' ? { [referenceKey]: fileId } : fileId,
  });
  switch (item.type) {
    case 'file-data':
      return file(item.mediaType, { type: 'data', data: item.data }, item.filename);
    case 'image-data':
      return file(item.mediaType, { type: 'data', data: item.data });
    case 'file-url':
      return file(item.mediaType ?? 'application/octet-stream', { type: 'url', url: new URL(item.url) });
    case 'image-url':
      return file('image/*', { type: 'url', url: new URL(item.url) });
    case 'file-id':
      return file('application/octet-stream', reference(item.fileId));
    case 'image-file-id':
      return file('image/*', reference(item.fileId));
    default:
      return item;
  }
}

/** A content part of v4 in v3's shape, or undefined when v3 has no place for it. */
function toV3Part(part: unknown): unknown {
  const typed = part as { type: string };
  switch (typed.type) {
    case 'custom':
    case 'reasoning-file':
      return undefined;
    case 'file': {
      const { data, ...rest } = part as V4File;
      return data.type === 'data' ? { ...rest, data: data.data } : undefined;
    }
    default:
      return part;
  }
}

function toV3StreamPart(part: unknown): LanguageModelV3StreamPart | undefined {
  const typed = part as { type: string };
  switch (typed.type) {
    case 'ping':
      return undefined;
    case 'stream-start': {
      const start = part as { type: 'stream-start'; warnings: SharedV3Warning[] };
      return { ...start, warnings: start.warnings.map(toV3Warning) };
    }
    case 'finish': {
      const finish = part as Extract<LanguageModelV3StreamPart, { type: 'finish' }>;
      return { ...finish, finishReason: toV3FinishReason(finish.finishReason) };
    }
    default:
      return toV3Part(part) as LanguageModelV3StreamPart | undefined;
  }
}

function toV3FinishReason(reason: LanguageModelV3FinishReason): LanguageModelV3FinishReason {
  return (reason.unified as string) === 'interrupted' ? { ...reason, unified: 'other' } : reason;
}

function toV3Warning(warning: SharedV3Warning): SharedV3Warning {
  const typed = warning as SharedV3Warning | { type: 'deprecated'; setting: string; message: string };
  if (typed.type === 'deprecated') return { type: 'other', message: `${typed.setting}: ${typed.message}` };
  return warning;
}

function leftOut(part: unknown): SharedV3Warning {
  return {
    type: 'other',
    message: `a ${(part as { type: string }).type} part has no place in this answer and was left out`,
  };
}
