import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP exporter sent it, ids as hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  /** The resource's attributes (`service.name`, …). */
  resource: Record<string, unknown>;
}

/** An OTLP/HTTP trace receiver on 127.0.0.1: every `POST /v1/traces`, raw and decoded. */
export interface OtlpReceiver {
  /** The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  /** Each export as received: its content type, headers and raw bytes. */
  exports: Array<{ contentType: string; headers: http.IncomingHttpHeaders; body: Buffer }>;
  /** Every span received so far, decoded from protobuf or JSON by the content type. */
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

/**
 * Starts a receiver answering every export with an empty success (as a collector does), keeping
 * what the real exporter sent.
 *
 * @example
 * const receiver = await startOtlpReceiver();
 * // OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: OtlpReceiver['exports'] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const contentType = request.headers['content-type'] ?? '';
      if (request.method === 'POST' && request.url === '/v1/traces') {
        exports.push({ contentType, headers: request.headers, body: Buffer.concat(chunks) });
      }
      if (contentType.includes('json')) {
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      } else response.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    spans: () =>
      exports.flatMap((entry) =>
        entry.contentType.includes('json') ? spansFromJson(entry.body) : spansFromProtobuf(entry.body),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type JsonValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
};
type JsonKeyValue = { key: string; value: JsonValue };

function jsonValue(value: JsonValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

const jsonAttributes = (list: JsonKeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map((entry) => [entry.key, jsonValue(entry.value)]));

function spansFromJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: Array<{
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans?: Array<{
        spans?: Array<{
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: JsonKeyValue[];
        }>;
      }>;
    }>;
  };
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind,
        attributes: jsonAttributes(span.attributes),
        resource,
      })),
    );
  });
}

/** The fields of one protobuf message: field number → values (varints as bigint, the rest as bytes). */
function protobufFields(bytes: Uint8Array): Map<number, Array<bigint | Uint8Array>> {
  const fields = new Map<number, Array<bigint | Uint8Array>>();
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = bytes[offset++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (offset < bytes.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wire = tag & 7;
    let value: bigint | Uint8Array;
    if (wire === 0) value = varint();
    else if (wire === 1) {
      value = bytes.subarray(offset, offset + 8);
      offset += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      value = bytes.subarray(offset, offset + length);
      offset += length;
    } else if (wire === 5) {
      value = bytes.subarray(offset, offset + 4);
      offset += 4;
    } else throw new Error(`unexpected protobuf wire type ${wire}`);
    const list = fields.get(field) ?? [];
    list.push(value);
    fields.set(field, list);
  }
  return fields;
}

const text = (value: bigint | Uint8Array | undefined) =>
  value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : '';
const hex = (value: bigint | Uint8Array | undefined) =>
  value instanceof Uint8Array ? Buffer.from(value).toString('hex') : '';
const messages = (fields: Map<number, Array<bigint | Uint8Array>>, field: number) =>
  (fields.get(field) ?? []).filter((value): value is Uint8Array => value instanceof Uint8Array).map(protobufFields);

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array. */
function protobufValue(fields: Map<number, Array<bigint | Uint8Array>>): unknown {
  if (fields.has(1)) return text(fields.get(1)?.[0]);
  if (fields.has(2)) return fields.get(2)?.[0] === 1n;
  if (fields.has(3)) return Number(BigInt.asIntN(64, fields.get(3)?.[0] as bigint));
  if (fields.has(4)) return Buffer.from(fields.get(4)?.[0] as Uint8Array).readDoubleLE(0);
  if (fields.has(5)) return messages(messages(fields, 5)[0] ?? new Map(), 1).map(protobufValue);
  return undefined;
}

/** KeyValue: 1 key, 2 value. */
const protobufAttributes = (list: Array<Map<number, Array<bigint | Uint8Array>>>) =>
  Object.fromEntries(list.map((entry) => [text(entry.get(1)?.[0]), protobufValue(messages(entry, 2)[0] ?? new Map())]));

/**
 * ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1): 1 resource_spans →
 * ResourceSpans (1 resource → 1 attributes; 2 scope_spans → 2 spans) → Span (1 trace_id,
 * 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes).
 */
function spansFromProtobuf(body: Buffer): ReceivedSpan[] {
  return messages(protobufFields(body), 1).flatMap((resourceSpans) => {
    const resource = protobufAttributes(messages(messages(resourceSpans, 1)[0] ?? new Map(), 1));
    return messages(resourceSpans, 2).flatMap((scope) =>
      messages(scope, 2).map((span) => ({
        traceId: hex(span.get(1)?.[0]),
        spanId: hex(span.get(2)?.[0]),
        parentSpanId: hex(span.get(4)?.[0]),
        name: text(span.get(5)?.[0]),
        kind: Number(span.get(6)?.[0] ?? 0n),
        attributes: protobufAttributes(messages(span, 9)),
        resource,
      })),
    );
  });
}
