/* Search from file:// — opening site/index.html from a file manager, no server.
 *
 * Material's search runs in a Web Worker, and a page opened from file:// may not start one.
 * Its offline plugin answers with a shim it loads from a CDN (unpkg), which an offline site
 * must not need. This is the site's own: on file:// only, `Worker` becomes an object that runs
 * the worker's script in a hidden same-origin frame (an about:blank frame shares its opener's
 * origin), passing messages both ways as the worker API does. Over http(s) it does nothing.
 * (The file name contains "iframe-worker": Material's offline plugin then adds no CDN shim.) */
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  class FrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.queue = [];
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      this.frame.setAttribute("aria-hidden", "true");
      this.frame.title = "search";
      (document.body || document.documentElement).appendChild(this.frame);
      const scope = this.frame.contentWindow;
      // what the worker's script calls as globals: postMessage answers the page
      scope.postMessage = (data) => this.answer(data);
      scope.importScripts = (...urls) => {
        throw new Error(`search from file:// cannot load ${urls.join(", ")}: serve site/ over http`);
      };
      const script = scope.document.createElement("script");
      script.src = new URL(url, location.href).href;
      script.onload = () => {
        const waiting = this.queue;
        this.queue = null;
        waiting.forEach((data) => this.deliver(data));
      };
      script.onerror = () => console.error(`search: could not load ${script.src}`);
      scope.document.head.appendChild(script);
    }

    postMessage(data) {
      if (this.queue) this.queue.push(data);
      else this.deliver(data);
    }

    deliver(data) {
      const scope = this.frame.contentWindow;
      scope.dispatchEvent(new scope.MessageEvent("message", { data }));
    }

    answer(data) {
      const event = new MessageEvent("message", { data });
      if (typeof this.onmessage === "function") this.onmessage(event);
      this.dispatchEvent(event);
    }

    terminate() {
      this.frame.remove();
    }
  }

  window.Worker = FrameWorker;
})();
