// A host on the official TypeScript SDK: it starts `contextd mcp` over stdio,
// lists every page of resources, reads one, subscribes to it, then creates
// the file named by TRIGGER (the upstream then adds a resource and starts
// sending updates for the subscribed one) and waits for
// notifications/resources/list_changed and notifications/resources/updated.
// It prints one JSON object with what it saw.
//
// Environment: CONTEXTD_CMD (JSON array: command and arguments), TARGET_URI
// (the namespaced URI to read and subscribe to), LATE_URI (the namespaced
// URI the upstream adds), TRIGGER (a path).
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = JSON.parse(process.env.CONTEXTD_CMD);
const target = process.env.TARGET_URI;
const late = process.env.LATE_URI;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, ok, ms) {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const client = new Client({ name: "ts-sdk-test-host", version: "0.0.0" });
let listChanged = 0;
const updated = [];
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
  listChanged++;
});
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updated.push(n.params.uri);
});
await client.connect(
  new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" }),
);

async function listAll() {
  const out = [];
  let cursor;
  let pages = 0;
  do {
    const r = await client.listResources(cursor ? { cursor } : {});
    pages++;
    out.push(...r.resources);
    cursor = r.nextCursor;
  } while (cursor);
  return { resources: out, pages };
}

let listed;
await until("the target resource to be listed", async () => {
  listed = await listAll();
  return listed.resources.some((r) => r.uri === target);
}, 60000);
const read = await client.readResource({ uri: target });
await client.subscribeResource({ uri: target });

// A host re-lists on each list_changed; the change must show after one.
listChanged = 0;
const t0 = Date.now();
writeFileSync(process.env.TRIGGER, "go");
let seen = 0;
let after;
let listChangedMs;
await until("list_changed followed by a list with the new resource", async () => {
  if (listChanged === seen) return false;
  seen = listChanged;
  listChangedMs = Date.now() - t0;
  after = await listAll();
  return after.resources.some((r) => r.uri === late);
}, 20000);
await until("resources/updated", async () => updated.length > 0, 20000);
const updatedMs = Date.now() - t0;

console.log(JSON.stringify({
  capabilities: client.getServerCapabilities(),
  listed: listed.resources.map((r) => r.uri),
  pages: listed.pages,
  read: read.contents,
  updated,
  listChangedMs,
  updatedMs,
  lateListed: after.resources.some((r) => r.uri === late),
}));
await client.close();
