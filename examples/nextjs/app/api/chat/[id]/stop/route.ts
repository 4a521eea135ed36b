import { mordn } from '@/lib/mordn';

/**
 * Stop (`/api/chat/<id>/stop`): the component posts here when the user presses Stop, and the
 * handler asks Mordn to stop the chat's answer wherever it runs. The answer then ends for every
 * tab reading it and is stored as stopped.
 */
export const { POST } = mordn;
