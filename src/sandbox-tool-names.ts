/**
 * The six curated sandbox tools, in the order they are listed to models.
 *
 * A ground-floor table: it imports nothing, so the configuration (which narrows it), the service's
 * sandbox modules and the host-side entry points (`createChatHandler` reserves these names,
 * `mintSandboxToken` checks them) share it without a host's bundle carrying the service.
 */
export const SANDBOX_TOOL_NAMES = [
  'sandbox_exec',
  'sandbox_list_files',
  'sandbox_read_file',
  'sandbox_write_file',
  'sandbox_import_file',
  'sandbox_publish_file',
] as const;

/** One of `SANDBOX_TOOL_NAMES`. */
export type SandboxToolName = (typeof SANDBOX_TOOL_NAMES)[number];
