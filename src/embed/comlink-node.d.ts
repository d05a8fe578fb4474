// comlink ships the Node adapter's types as node-adapter.d.ts beside node-adapter.mjs (no "exports" map).
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
