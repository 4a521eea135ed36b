import { mordn } from '@/lib/mordn';

/**
 * Resume (`/api/chat/<id>/stream`): what the component asks after loading a chat's history, and
 * when its stream drops. Mordn replays the chat's running answer (or one stored within the last
 * minute) from its first chunk and follows it live; 204 when there is none.
 */
export const { GET } = mordn;
