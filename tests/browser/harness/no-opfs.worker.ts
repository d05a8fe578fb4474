// pagewise's worker where OPFS cannot open, as in a private window (getDirectory rejects with a SecurityError, as
// Firefox's private mode does) or an old browser (no getDirectory at all). The worker's name picks which: set before
// serveMemory() runs, so the engine meets it exactly as it would in such a browser.
import { serveMemory } from '../../../worker/serve.js';

const proto = StorageManager.prototype as unknown as Record<string, unknown>;
if (self.name === 'no-opfs:missing') {
  delete proto.getDirectory;
} else {
  Object.defineProperty(proto, 'getDirectory', {
    configurable: true,
    value: () => Promise.reject(new DOMException('The operation is insecure.', 'SecurityError')),
  });
}
serveMemory();
