import type { RefusalReason } from './effective-policy.js';

/** Why, in words a user (and the model) understands, a connection was refused. */
const EXPLANATIONS: Record<RefusalReason, string> = {
  policy: 'the host is not one the policy allows',
  egress_off: 'the operator keeps network access closed for this workspace',
  private_address: 'it leads to a private, local or reserved address',
  port: 'the port is not one the policy allows',
  method: 'only CONNECT and absolute-form http:// requests go through the proxy',
  limit: "the workspace's network limit is reached",
  resolve_failed: 'the name could not be resolved',
};

/** What a client asked for, printable in a status line (no controls, no non-ASCII, bounded). */
export function printableTarget(target: string): string {
  const printable = target.replace(/[^\x21-\x7e]/g, '?');
  return printable.length > 200 ? `${printable.slice(0, 200)}…` : printable;
}

/** The one-line explanation of a refusal of `target`, as the model and the user read it. */
export function refusalText(target: string, reason: RefusalReason): string {
  return `${printableTarget(target)} was refused by the workspace's network policy: ${EXPLANATIONS[reason]}.`;
}

/** The reason phrase of the proxy's 403: HTTPS clients show only the status line. */
export function refusalPhrase(target: string): string {
  // A reason phrase is ASCII: the ellipsis of a shortened target becomes three dots.
  return `Forbidden by the workspace network policy: ${printableTarget(target)}`.replace(/…$/, '...');
}

/**
 * The whole HTTP/1.1 answer the proxy gives a refused connection: `403` whose reason phrase and
 * one-line body name the host as the client asked for it.
 */
export function refusalResponse(target: string, reason: RefusalReason): string {
  const body = `${refusalText(target, reason)}\n`;
  return [
    `HTTP/1.1 403 ${refusalPhrase(target)}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** A refused connection as the exec notice names it. */
export interface RecentRefusal {
  at: number;
  target: string;
  reason: RefusalReason;
}

/**
 * The one-line notice a `sandbox_exec` result gets when its command's connections were refused
 * (as the limit notices do), so the model can say why an install or a request failed.
 */
export function egressNotice(refusals: readonly RecentRefusal[]): string | undefined {
  const first = refusals[0];
  if (!first) return undefined;
  const others = new Set(refusals.map((refusal) => refusal.target)).size - 1;
  const more = others > 0 ? ` (and ${others} other destination${others === 1 ? '' : 's'})` : '';
  return `EGRESS_REFUSED: ${refusalText(first.target, first.reason).replace(/\.$/, '')}${more}.`;
}
