// Loaded with `node --import ./loopback.mjs`: every server the process
// starts listens on 127.0.0.1 only. server-everything's streamableHttp mode
// calls app.listen(PORT) and would bind every interface; the tests may
// listen on loopback only.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] === "string") args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && !Array.isArray(first)) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
