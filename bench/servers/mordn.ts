import { serveBenchService } from './bench-service.js';

/** The service as `npm start` builds it, on an ephemeral port (see `serveBenchService`). */
await serveBenchService();
