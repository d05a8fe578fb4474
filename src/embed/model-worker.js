// @ts-check
// Browser: the embedding model in its own Web Worker (started by transformers.ts inside the engine's worker), so
// that a batch never delays the engine's answers.
import { expose } from 'comlink';
import { createModelHost } from './model-host.js';

expose(createModelHost());
