/**
 * `mordn/react`: the chat component for a Mordn endpoint, and the pure wording helpers it uses.
 * Browser code only; no server entry point imports it.
 */
export { FileCard, type FileCardProps } from './file-card.js';
export { describeAccepted, formatBytes, toolLabel } from './format.js';
export { type LimitName, type LimitWording, limitReachedMessage } from './limits.js';
export type { ChatFile, Interruption, Upload } from './messages.js';
export { MordnChat, type MordnChatProps } from './mordn-chat.js';
export type { AttachmentFeatures } from './use-attachments.js';
