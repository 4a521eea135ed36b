import type { ToolSet, UIMessage } from 'ai';
import type { AgentConfig } from '../agents/config-schema.js';
import type { ArtifactCarrier } from './artifact-carrier.js';

/**
 * What a chat request knows about its caller. Read-only: `config` is the resolved server config
 * (published, or the preview's), `abortSignal` the handler's own signal. Neither conveys backend
 * authorization: the API key and the verified user remain authoritative.
 */
export interface ChatRequestContext {
  readonly request: Request;
  /** The verified, signed-in user (from the host's `getUserId`), or `anon:…`. */
  readonly userId: string;
  readonly chatId: string | undefined;
  readonly config: Readonly<AgentConfig>;
  readonly abortSignal?: AbortSignal;
}

/** The two public booleans of a managed-sandbox status. */
export interface SandboxAvailability {
  enabled: boolean;
  available: boolean;
}

/** Tools built for one request, and how to let go of what they hold (an MCP connection). */
export interface BuiltTools {
  tools: ToolSet;
  /** Closes connections; never touches the sandbox itself. Safe to call more than once. */
  close(): Promise<void>;
}

/**
 * A managed-sandbox integration (`createHostedSandboxes`): status and, when available, the six
 * curated tools. `onArtifact` is a server-code-only sink for carriers minted after a live publish.
 */
export interface ManagedSandboxIntegration {
  readonly kind: 'mordn-managed';
  status(context: ChatRequestContext): Promise<SandboxAvailability>;
  buildTools(
    context: ChatRequestContext,
    options: { abortSignal: AbortSignal; onArtifact: (carrier: ArtifactCarrier) => void },
  ): Promise<BuiltTools>;
  /**
   * Whether the user already has a workspace, asked without provisioning one. The link guard
   * publishes a file a link names only then; without this method it never publishes.
   */
  hasWorkspace?(context: ChatRequestContext): Promise<boolean>;
}

/** Persistence of chats, scoped to one user: a chat id of another user is simply not found. */
export interface ChatStore {
  loadMessages(scope: ChatScope, chatId: string): Promise<UIMessage[] | undefined>;
  /**
   * Replaces the chat's messages with `messages`, creating the chat — unless `mustExist`: then a
   * chat deleted meanwhile stays deleted (an answer's own save after the turn stored its question).
   */
  saveMessages(
    scope: ChatScope,
    chatId: string,
    messages: UIMessage[],
    options?: { mustExist?: boolean },
  ): Promise<void>;
  /** Removes the chat and its messages; returns whether it existed. */
  deleteChat(scope: ChatScope, chatId: string): Promise<boolean>;
}

export interface ChatScope {
  userId: string;
}

/** Who a storage operation is for: the verified user of a request. */
export interface AttachmentOwner {
  readonly request: Request;
  readonly userId: string;
}

/** One of the user's stored files as its registry records it; the bytes are read only on demand. */
export interface StoredAttachment {
  /** The canonical media type, decided from the bytes when the file was stored (never a client's claim). */
  readonly mediaType: string;
  readonly filename: string;
  readonly size: number;
  /** The stored bytes (exactly `size` of them). */
  read(): Promise<Uint8Array>;
}

/** Signed links for stored files (uploads and artifacts), by storage path. */
export interface AttachmentStorage {
  /** Fresh URLs for the paths the user owns; missing, revoked and unowned map to `undefined`. */
  resign(owner: AttachmentOwner, storagePaths: readonly string[]): Promise<Map<string, string | undefined>>;
  /** Deletes files; throws when storage refuses (the caller keeps its records for a retry). */
  delete(owner: AttachmentOwner, storagePaths: readonly string[]): Promise<void>;
  /**
   * The records of the paths the user owns (missing, revoked and unowned are absent). The chat
   * sends images (and, without sandboxes, PDFs) to the model as these bytes, never as a URL, and
   * decides what is an image from the record's media type. Without it, every file reaches the
   * model only as a descriptor.
   */
  find?(owner: AttachmentOwner, storagePaths: readonly string[]): Promise<Map<string, StoredAttachment>>;
}
