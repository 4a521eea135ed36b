/** Busy, status and error state around an async action started by the user. */
import { useCallback, useState } from 'react';

/** What `useAction()` returns: the state to show, and `run` to start the action. */
export interface Action {
  busy: boolean;
  status: string;
  error: unknown;
  setStatus: (status: string) => void;
  setError: (error: unknown) => void;
  run: (task: () => Promise<void>) => Promise<void>;
}

/**
 * `run(task)` marks the action busy and clears its status and error, then keeps any failure as the
 * error; the task sets the status on success.
 */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async (task: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    setStatus('');
    try {
      await task();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, status, error, setStatus, setError, run };
}
