// Preloaded with `--import` into a `mordn serve` child: appends to the file named by
// MORDN_TEST_LOAD_LOG the URL of every OpenTelemetry SDK, exporter or resources module it loads.
import { register } from 'node:module';

const hook = `
import { appendFileSync } from 'node:fs';
const SDK = /@opentelemetry\\/(sdk-|exporter-|resources|otlp-)/;
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.MORDN_TEST_LOAD_LOG && SDK.test(resolved.url)) appendFileSync(process.env.MORDN_TEST_LOAD_LOG, resolved.url + '\\n');
  return resolved;
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
