import { mordn } from '@/lib/mordn';

/**
 * What `useChat({ resume: true })` asks on mount (`/api/chat/<id>/stream`): Mordn answers 204,
 * nothing to resume, and the handler passes that through, so the chat starts ready.
 */
export const { GET } = mordn;
