/**
 * Response bodies in tests are checked field by field with `expect`, so they are read loosely.
 */
// biome-ignore lint/suspicious/noExplicitAny: test assertions inspect arbitrary JSON.
export type Json = any;

export async function readJson(response: Response): Promise<Json> {
  return response.json();
}
