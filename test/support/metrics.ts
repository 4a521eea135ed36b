import type { TestService } from './service.js';

/**
 * How many requests the service has answered on `route`, whatever their method and status, read
 * from its own `/metrics` (the route as the metrics label it, e.g. `/v1/sandbox/status`).
 *
 * @example
 * const before = await servedRequests(service, '/v1/sandbox/mcp');
 * // … something that must not reach the route …
 * expect(await servedRequests(service, '/v1/sandbox/mcp')).toBe(before);
 */
export async function servedRequests(service: TestService, route: string): Promise<number> {
  const text = await (await service.fetch('/metrics')).text();
  let total = 0;
  for (const match of text.matchAll(
    /^mordn_http_requests_total\{method="[A-Z]+",route="([^"]+)",status="\d+"\} (\d+)$/gm,
  )) {
    if (match[1] === route) total += Number(match[2]);
  }
  return total;
}
