import { z } from '@hono/zod-openapi';

/**
 * The documented shape of `GET /v1/chats/{chatId}`: AI SDK v6 UI messages as Mordn stores and
 * returns them (what the SDK's own `safeValidateUIMessages` accepts, plus Mordn's top-level file
 * fields and `metadata.mordn`). Documentation only: the route does not validate its responses
 * against it, and the objects accept keys a newer SDK adds.
 */

const ProviderMetadataSchema = z.record(z.string(), z.record(z.string(), z.unknown())).openapi('ProviderMetadata', {
  description: 'Provider-specific data, keyed by provider (AI SDK `ProviderMetadata`).',
});

const TextStateSchema = z
  .enum(['streaming', 'done'])
  .openapi({ description: '`done` in history: an answer cut short is stored with its text closed.' });

const TextPartSchema = z
  .object({
    type: z.literal('text'),
    text: z.string(),
    state: TextStateSchema.optional(),
    providerMetadata: ProviderMetadataSchema.optional(),
  })
  .openapi('TextUIPart');

const ReasoningPartSchema = z
  .object({
    type: z.literal('reasoning'),
    id: z.string().optional(),
    text: z.string(),
    state: TextStateSchema.optional(),
    providerMetadata: ProviderMetadataSchema.optional(),
  })
  .openapi('ReasoningUIPart');

const FilePartSchema = z
  .object({
    type: z.literal('file'),
    mediaType: z.string().openapi({
      description: 'For a stored file, the type its bytes were detected as (upload) or published as (artifact).',
      example: 'text/csv',
    }),
    url: z.string().openapi({
      description:
        'A fresh signed download URL, minted for this response; `""` when the file is `unavailable` (never an old link).',
    }),
    filename: z.string().optional(),
    size: z.number().int().nonnegative().optional().openapi({ description: 'Bytes (published files).' }),
    storagePath: z.string().optional().openapi({
      description: 'How messages refer to the stored file.',
      example: 'uploads/9f86d081884c7d659a2feaa0c55ad015',
    }),
    unavailable: z.literal(true).optional().openapi({
      description: 'The file was deleted or revoked, or is not the caller\'s: `url` is `""`.',
    }),
    providerMetadata: ProviderMetadataSchema.optional().openapi({
      description: 'A published file keeps `mordn.sandboxFile` (`filename`, `size`, `storagePath`), as it streamed.',
    }),
  })
  .openapi('FileUIPart', {
    description: 'A file: an upload the user sent, or a file the model published from its sandbox.',
  });

const SourceUrlPartSchema = z
  .object({
    type: z.literal('source-url'),
    sourceId: z.string(),
    url: z.string(),
    title: z.string().optional(),
    providerMetadata: ProviderMetadataSchema.optional(),
  })
  .openapi('SourceUrlUIPart');

const SourceDocumentPartSchema = z
  .object({
    type: z.literal('source-document'),
    sourceId: z.string(),
    mediaType: z.string(),
    title: z.string(),
    filename: z.string().optional(),
    providerMetadata: ProviderMetadataSchema.optional(),
  })
  .openapi('SourceDocumentUIPart');

const StepStartPartSchema = z
  .object({ type: z.literal('step-start') })
  .openapi('StepStartUIPart', { description: 'The start of one model step (a request to the model).' });

const DataPartSchema = z
  .object({
    type: z
      .string()
      .regex(/^data-/)
      .openapi({ example: 'data-weather' }),
    id: z.string().optional(),
    data: z.unknown(),
  })
  .openapi('DataUIPart');

const ToolStateSchema = z
  .enum([
    'input-streaming',
    'input-available',
    'approval-requested',
    'approval-responded',
    'output-available',
    'output-error',
    'output-denied',
  ])
  .openapi({
    description:
      'In history a call is finished: `output-available` (with `output`), `output-error` (with `errorText`; an answer cut short stores its unfinished calls so) or an approval state.',
  });

/** Fields of a tool call part, whether the tool is static (`tool-<name>`) or dynamic (MCP tools). */
const toolCallFields = {
  toolCallId: z.string(),
  state: ToolStateSchema,
  input: z.unknown().optional().openapi({ description: 'The arguments the model sent.' }),
  rawInput: z.unknown().optional(),
  output: z.unknown().optional().openapi({
    description:
      'The tool result (`output-available`); for an MCP tool (the sandbox tools among them), its MCP `CallToolResult` (`content`, `structuredContent`, `isError`).',
  }),
  errorText: z.string().optional().openapi({ description: 'Why the call failed (`output-error`).' }),
  providerExecuted: z.boolean().optional(),
  preliminary: z.boolean().optional(),
  title: z.string().optional(),
  toolMetadata: z.record(z.string(), z.unknown()).optional(),
  approval: z.object({ id: z.string(), approved: z.boolean().optional(), reason: z.string().optional() }).optional(),
  callProviderMetadata: ProviderMetadataSchema.optional(),
  resultProviderMetadata: ProviderMetadataSchema.optional(),
};

const DynamicToolPartSchema = z
  .object({
    type: z.literal('dynamic-tool'),
    toolName: z.string().openapi({ example: 'sandbox_exec' }),
    ...toolCallFields,
  })
  .openapi('DynamicToolUIPart', {
    description: 'A call of a tool discovered at run time: the managed-sandbox tools and other MCP tools.',
  });

const ToolPartSchema = z
  .object({
    type: z
      .string()
      .regex(/^tool-/)
      .openapi({ description: '`tool-` and the tool name.', example: 'tool-lookup_order' }),
    ...toolCallFields,
  })
  .openapi('ToolUIPart', { description: 'A call of a tool declared in code (`createChatHandler` hosts).' });

/** One part of a message; `type` tells which (a name, or the `tool-` and `data-` prefixes). */
export const UIMessagePartSchema = z
  .union([
    TextPartSchema,
    ReasoningPartSchema,
    FilePartSchema,
    SourceUrlPartSchema,
    SourceDocumentPartSchema,
    StepStartPartSchema,
    DynamicToolPartSchema,
    ToolPartSchema,
    DataPartSchema,
  ])
  .openapi(
    'UIMessagePart',
    { description: 'One part of a UI message, told apart by `type`: exactly one alternative matches a part.' },
    { unionPreferredType: 'oneOf' },
  );

const MessageMetadataSchema = z
  .object({
    mordn: z
      .object({
        interrupted: z
          .object({ reason: z.enum(['stop', 'disconnect', 'timeout', 'failed']) })
          .optional()
          .openapi({
            description:
              'Set on an answer that ended early: the client stopped it (`stop`, by aborting its request or `POST /v1/chat/{chatId}/stop`), its response lost its reader or a resumable answer found none within its grace (`disconnect`), its deadline passed (`timeout`), or the replica running it died or shut down first (`failed`, stored with what its chunk log held). Its parts are closed.',
          }),
      })
      .optional(),
  })
  .openapi('UIMessageMetadata');

export const UIMessageSchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    metadata: MessageMetadataSchema.optional(),
    parts: z.array(UIMessagePartSchema),
  })
  .openapi('UIMessage', { description: 'An AI SDK v6 UI message.' });

/** The body of `GET /v1/chats/{chatId}`. */
export const ChatHistorySchema = z
  .object({
    id: z.string(),
    messages: z.array(UIMessageSchema),
  })
  .openapi('ChatHistory', {
    description:
      "The chat's messages, oldest first, with every file reference re-signed. It passes the AI SDK's `safeValidateUIMessages` as it comes.",
  });
