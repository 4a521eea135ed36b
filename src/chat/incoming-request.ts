import type { FileUIPart, UIMessage } from 'ai';
import { z } from 'zod';
import { ServiceError } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import type { StoredFilePart } from './file-parts.js';

const TextPart = z.object({ type: z.literal('text'), text: z.string().max(100_000) });
const FilePart = z.object({
  type: z.literal('file'),
  mediaType: z.string().min(1).max(200),
  filename: z.string().max(512).optional(),
  url: z.string().max(16_384).optional(),
  storagePath: z.string().min(1).max(200).optional(),
  providerMetadata: z
    .object({ mordn: z.object({ storagePath: z.string().min(1).max(200).optional() }).optional() })
    .optional(),
});
const UserMessage = z.object({
  id: z.string().min(1).max(200),
  role: z.literal('user'),
  parts: z
    .array(z.discriminatedUnion('type', [TextPart, FilePart]))
    .min(1)
    .max(50),
});

const ChatRequestBody = z.object({
  id: z.string().min(1).max(200),
  messages: z.array(z.unknown()).max(2_000),
  trigger: z.enum(['submit-message', 'regenerate-message']).default('submit-message'),
});

export interface IncomingChatRequest {
  chatId: string;
  trigger: 'submit-message' | 'regenerate-message';
  /** The one message taken from the client: its latest user message (absent when regenerating). */
  message: UIMessage | undefined;
}

/**
 * Reads useChat's default body (`{ id, messages, trigger }`) and keeps **only** the last user
 * message. History comes from the store, so forged assistant, tool or system messages in the body
 * never reach the model. File parts must carry the `storagePath` of an upload; the URL a client
 * sends is dropped (the server re-signs from the path, within the user's own scope).
 */
export function parseChatRequest(body: unknown): IncomingChatRequest {
  const request = parseOrThrow(ChatRequestBody, body, 'chat request');
  if (request.trigger === 'regenerate-message') {
    return { chatId: request.id, trigger: request.trigger, message: undefined };
  }
  const last = request.messages.at(-1);
  const message = parseOrThrow(UserMessage, last, 'last message (it must be the user message to send)');
  const parts = message.parts.map((part): UIMessage['parts'][number] => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    const storagePath = part.storagePath ?? part.providerMetadata?.mordn?.storagePath;
    if (!storagePath) {
      throw new ServiceError(
        'VALIDATION_FAILED',
        'Attach files by uploading them first: file parts need a storagePath.',
        {
          errors: [{ path: 'messages.parts.storagePath', message: 'is required for file parts' }],
        },
      );
    }
    const stored: StoredFilePart = { type: 'file', mediaType: part.mediaType, storagePath };
    if (part.filename !== undefined) stored.filename = part.filename;
    return stored as FileUIPart;
  });
  return { chatId: request.id, trigger: request.trigger, message: { id: message.id, role: 'user', parts } };
}
