/**
 * Process lifecycle shared by the server and the readiness probe: once draining starts, `/readyz`
 * answers 503 so load balancers stop sending new work while in-flight requests finish.
 */
export interface Lifecycle {
  readonly draining: boolean;
  startDraining(): void;
}

export function createLifecycle(): Lifecycle {
  let draining = false;
  return {
    get draining() {
      return draining;
    },
    startDraining() {
      draining = true;
    },
  };
}
