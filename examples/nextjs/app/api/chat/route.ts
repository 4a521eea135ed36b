import { mordn } from '@/lib/mordn';

/**
 * The browser talks to this route only. POST: chat turns (useChat) and uploads (multipart); GET:
 * `?chatId=` history, `?bootstrap` picker hints; DELETE: `?chatId=`.
 */
export const { GET, POST, DELETE, OPTIONS } = mordn;
