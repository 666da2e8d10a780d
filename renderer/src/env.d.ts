/// <reference types="vite/client" />
import type { Bridge } from './api/bridge.js';

declare global {
  interface Window {
    /** Present only inside the desktop app (set by preload/index.ts). */
    lightworker?: Bridge;
  }
}

declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<object, object, unknown>;
  export default component;
}
