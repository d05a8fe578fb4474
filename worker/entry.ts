// The default worker that connect() starts when it is given none.
import { serveMemory } from './serve.js';

serveMemory();
