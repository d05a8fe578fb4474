// The demo's two DOM helpers: an element by id, and an element made with its properties and children.
export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
export const el = <K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};
