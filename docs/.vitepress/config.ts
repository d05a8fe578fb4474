import { defineConfig } from 'vitepress';
// Written by `typedoc` (npm run docs runs it first): the generated API reference's own sidebar.
import apiSidebar from '../api/typedoc-sidebar.json';

export default defineConfig({
  title: 'pagewise',
  description: 'A memory that never forgets for LLM chat apps: in the browser, in Node and at the edge.',
  lang: 'en',
  lastUpdated: false,
  vite: {
    // VitePress's own local search index (every page, the API reference included) is one chunk of about 0.8 MB; the
    // rest of the bundle is VitePress's theme, far under Vite's 500 kB default.
    build: { chunkSizeWarningLimit: 1600 },
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      { text: 'Reference', link: '/guide/configuration' },
      { text: 'Figures', link: '/figures' },
      { text: 'Contributing', link: '/contributing/architecture' },
    ],
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    sidebar: [
      {
        text: 'Introduction',
        items: [
          { text: 'Getting started', link: '/guide/getting-started' },
          { text: 'The demo', link: '/guide/demo' },
        ],
      },
      {
        text: 'Runtimes',
        items: [
          { text: 'Node', link: '/guide/node' },
          { text: 'Browser', link: '/guide/browser' },
          { text: 'Edge', link: '/guide/edge' },
          { text: 'Proxy', link: '/guide/proxy' },
          { text: 'Vercel AI SDK', link: '/guide/ai-sdk' },
          { text: 'MCP server', link: '/guide/mcp' },
          { text: 'Command line', link: '/guide/cli' },
        ],
      },
      {
        text: 'Memory',
        items: [
          { text: 'How a context is assembled', link: '/guide/context' },
          { text: 'Compaction', link: '/guide/compaction' },
          { text: 'Meaning: embeddings', link: '/guide/meaning' },
          { text: 'Web search', link: '/guide/search' },
          { text: 'Images, files, audio, reasoning', link: '/guide/attachments' },
          { text: 'Edits and regenerations', link: '/guide/branches' },
        ],
      },
      {
        text: 'Data and trust',
        items: [
          { text: 'Sync', link: '/guide/sync' },
          { text: 'Your data', link: '/guide/data' },
          { text: 'Retention', link: '/guide/retention' },
          { text: 'Security', link: '/guide/security' },
          { text: 'Encryption at rest', link: '/guide/encryption' },
          { text: 'Storage', link: '/guide/storage' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Configuration', link: '/guide/configuration' },
          { text: 'Operations: figures and upgrades', link: '/guide/operations' },
          { text: 'Errors', link: '/guide/errors' },
          { text: 'API', link: '/api/', collapsed: true, items: apiSidebar },
          { text: 'Libraries, and why', link: '/libraries' },
          { text: 'Limitations', link: '/guide/limitations' },
        ],
      },
      {
        text: 'Figures',
        items: [{ text: 'Figures', link: '/figures' }],
      },
      {
        text: 'Contributing',
        items: [
          { text: 'Architecture', link: '/contributing/architecture' },
          { text: 'Testing', link: '/contributing/testing' },
          { text: 'Code samples', link: '/contributing/samples' },
          { text: 'Releasing', link: '/contributing/releasing' },
        ],
      },
    ],
  },
});
