/** "Navigate and say what happened on the next page" (e.g. "Tenant Acme deleted."). */
import { createContext, useContext } from 'react';

export const FlashContext = createContext<(to: string, message: string) => void>((to) => {
  window.location.hash = to.replace(/^#/, '');
});

export function useNavigateWithMessage(): (to: string, message: string) => void {
  return useContext(FlashContext);
}
