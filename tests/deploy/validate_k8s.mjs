#!/usr/bin/env node
// Validates every Kubernetes manifest of a directory (default
// deploy/kubernetes), offline, strictly:
//
// - Each YAML document is parsed as Kubernetes parses it (YAML 1.1, duplicate
//   keys rejected) and typed by its apiVersion + kind with the interfaces of
//   the npm package kubernetes-types, which are generated from the official
//   OpenAPI spec of Kubernetes 1.30 (one interface per definition, required
//   fields non-optional, apiVersion and kind as literal types).
// - The TypeScript compiler then checks each document as an object literal of
//   that type: an unknown field anywhere (kubectl's --validate=strict), a
//   missing required field, a wrong type, a wrong apiVersion is an error.
// - Each API object is also validated with kubernetes-models, whose
//   validators are compiled (ajv) from the JSON schemas of the official
//   OpenAPI spec of Kubernetes 1.27: they check what the TypeScript types
//   cannot (integer vs number, int32/int64 ranges, formats), but not unknown
//   fields, which the first check rejects.
// - kustomization.yaml (not an API object) is checked against the kustomize
//   fields it may use, and must list every manifest of the directory but the
//   *.example.yaml ones, which it must not list.
// - Self-test: broken copies of the real manifests (an unknown field deep in
//   the pod spec, a string where an integer goes, a missing required field,
//   ...) must each be rejected, so this test cannot pass by checking nothing.
//
// Not checked: the grammar of names and labels, what only the API server's
// own validation knows (e.g. selector matching the template's labels); and
// a quantity must be a string here, where the API also accepts a number.
//
// Usage: node tests/deploy/validate_k8s.mjs [DIR]
// Needs the pinned packages of tests/deploy (scripts/test.sh runs npm ci).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(import.meta.url);
let ts, YAML;
try {
  ts = require("typescript");
  YAML = require("yaml");
  require.resolve("kubernetes-types/package.json");
} catch (e) {
  console.error(`validate_k8s: the pinned npm packages of tests/deploy are not installed (${e.code || e.message}):\n` +
                "  run scripts/test.sh, or: (cd tests/deploy && npm ci)");
  process.exit(1);
}
let modelsVersion;
try {
  modelsVersion = require("kubernetes-models/package.json").version;
} catch (e) {
  console.error("validate_k8s: kubernetes-models is not installed: run scripts/test.sh, or: (cd tests/deploy && npm ci)");
  process.exit(1);
}
const TYPES_DIR = path.dirname(require.resolve("kubernetes-types/package.json"));
const TYPES_VERSION = require("kubernetes-types/package.json").version;

const dir = path.resolve(process.argv[2] || path.join(REPO, "deploy", "kubernetes"));
const rel = (f) => path.relative(process.cwd(), f) || f;

// ------------------------------------------------------------- the types

// "apps/v1" -> "apps/v1", "v1" -> "core/v1", "networking.k8s.io/v1" ->
// "networking/v1", "rbac.authorization.k8s.io/v1" -> "rbac/v1".
function typesModule(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    return { error: "apiVersion and kind must be strings" };
  }
  const parts = apiVersion.split("/");
  const [group, version] = parts.length === 1 ? ["core", parts[0]] : parts;
  const mod = `${group.replace(/\.k8s\.io$/, "").split(".")[0]}/${version}`;
  const file = path.join(TYPES_DIR, `${mod}.d.ts`);
  if (parts.length > 2 || !fs.existsSync(file)) {
    return { error: `no API group/version ${apiVersion} in Kubernetes ${TYPES_VERSION}` };
  }
  const src = fs.readFileSync(file, "utf8");
  const body = src.match(new RegExp(`export interface ${kind} \\{([\\s\\S]*?)\\n\\}`));
  if (!body) return { error: `no kind ${kind} in ${apiVersion}` };
  const declared = body[1].match(/apiVersion\?: "([^"]+)"/);
  if (!declared || declared[1] !== apiVersion) {
    return { error: `${kind} is not a top-level object of ${apiVersion}` };
  }
  return { module: `kubernetes-types/${mod}`, type: kind };
}

// kustomize's Kustomization has no OpenAPI spec in these packages: the fields
// a directory like ours may use, strictly.
const KUSTOMIZATION_TS = `
export interface Image { name: string; newName?: string; newTag?: string; digest?: string }
export interface Label { pairs: { [k: string]: string }; includeSelectors?: boolean; includeTemplates?: boolean }
export interface Patch { path?: string; patch?: string; target?: { [k: string]: string }; options?: { [k: string]: boolean } }
export interface Kustomization {
  apiVersion: "kustomize.config.k8s.io/v1beta1";
  kind: "Kustomization";
  metadata?: { name?: string; annotations?: { [k: string]: string } };
  namespace?: string;
  namePrefix?: string;
  nameSuffix?: string;
  resources?: string[];
  components?: string[];
  images?: Image[];
  labels?: Label[];
  commonAnnotations?: { [k: string]: string };
  patches?: Patch[];
  replicas?: { name: string; count: number }[];
}
`;

// ------------------------------------------------- documents as TS literals

// One line per key, so that a diagnostic's line gives the field's path.
function literal(value) {
  const lines = [];
  const write = (v, p, ind, prefix, suffix) => {
    if (v instanceof Date) v = v.toISOString();
    if (v !== null && typeof v === "object") {
      const isArray = Array.isArray(v);
      lines.push({ text: `${ind}${prefix}${isArray ? "[" : "{"}`, path: p });
      const entries = isArray ? v.map((x, i) => [i, x]) : Object.entries(v);
      for (const [k, x] of entries) {
        const cp = isArray ? `${p}[${k}]` : p ? `${p}.${k}` : k;
        write(x, cp, ind + "  ", isArray ? "" : `${JSON.stringify(k)}: `, ",");
      }
      lines.push({ text: `${ind}${isArray ? "]" : "}"}${suffix}`, path: p });
    } else {
      lines.push({ text: `${ind}${prefix}${JSON.stringify(v === undefined ? null : v)}${suffix}`, path: p });
    }
  };
  write(value, "", "", "", ";");
  return lines;
}

const units = []; // {file, label, name, source, lines, header, expectFail, errors}

function addUnit(file, label, doc, expectFail = false) {
  const unit = { file, label, expectFail, errors: [] };
  units.push(unit);
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    unit.errors.push("the document is not a mapping");
    return unit;
  }
  let importLine;
  if (doc.apiVersion === "kustomize.config.k8s.io/v1beta1" && doc.kind === "Kustomization") {
    importLine = `import type { Kustomization as T } from "./kustomization-fields";`;
    unit.isKustomization = true;
  } else {
    const t = typesModule(doc.apiVersion, doc.kind);
    if (t.error) {
      unit.errors.push(t.error);
      return unit;
    }
    importLine = `import type { ${t.type} as T } from "${t.module}";`;
    const name = doc.metadata && doc.metadata.name;
    if (typeof name !== "string" || name === "") unit.errors.push("metadata.name: missing");
  }
  if (!unit.isKustomization) unit.doc = doc;
  const header = [importLine, "export const doc: T ="];
  unit.lines = literal(doc);
  unit.header = header.length;
  unit.source = header.join("\n") + "\n" + unit.lines.map((l) => l.text).join("\n") + "\n";
  unit.name = path.join(HERE, ".virtual", `${units.length - 1}.ts`);
  return unit;
}

// ---------------------------------------------------------- the manifests

const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
if (files.length === 0) {
  console.error(`validate_k8s: no *.yaml in ${rel(dir)}`);
  process.exit(1);
}
const parsed = {}; // file -> [docs]
for (const f of files) {
  const full = path.join(dir, f);
  const docs = YAML.parseAllDocuments(fs.readFileSync(full, "utf8"), { version: "1.1", uniqueKeys: true });
  parsed[f] = [];
  docs.forEach((d, i) => {
    const where = docs.length > 1 ? `${f}#${i + 1}` : f;
    if (d.errors.length || d.warnings.length) {
      const u = addUnit(full, where, {});
      u.errors = [...d.errors, ...d.warnings].map((e) => `YAML: ${e.message.split("\n")[0]}`);
      return;
    }
    const doc = d.toJS();
    if (doc === null) return; // an empty document (a trailing ---)
    parsed[f].push(doc);
    addUnit(full, `${where}: ${doc.kind || "?"} ${(doc.metadata && doc.metadata.name) || ""}`.trim(), doc);
  });
}

// The kustomization lists exactly the real manifests, which all exist.
const kfile = files.find((f) => f === "kustomization.yaml");
if (kfile && parsed[kfile][0]) {
  const unit = units.find((u) => u.file === path.join(dir, kfile));
  const listed = parsed[kfile][0].resources || [];
  for (const r of listed) {
    if (!fs.existsSync(path.join(dir, r))) unit.errors.push(`resources: ${r} does not exist`);
    if (/\.example\.ya?ml$/.test(r)) unit.errors.push(`resources: ${r} is an example and must not be applied`);
  }
  for (const f of files) {
    if (f !== kfile && !/\.example\.ya?ml$/.test(f) && !listed.includes(f)) {
      unit.errors.push(`resources: ${f} is not listed`);
    }
  }
}

// ----------------------------------------------- self-test: broken copies

const clone = (x) => JSON.parse(JSON.stringify(x));
const find = (kind) => Object.values(parsed).flat().find((d) => d && d.kind === kind);
const mutations = [
  ["Deployment", "unknown field in a container's securityContext",
   (d) => { d.spec.template.spec.containers[0].securityContext.runAsNonRooot = true; }],
  ["Deployment", "replicas as a string", (d) => { d.spec.replicas = "2"; }],
  ["Deployment", "required spec.selector missing", (d) => { delete d.spec.selector; }],
  ["Deployment", "unknown top-level field", (d) => { d.specs = d.spec; }],
  ["Deployment", "emptyDir sizeLimit under the wrong key",
   (d) => { const v = d.spec.template.spec.volumes[0]; v.emptyDir.size = v.emptyDir.sizeLimit; delete v.emptyDir.sizeLimit; }],
  ["Deployment", "env var without a name", (d) => { delete d.spec.template.spec.containers[0].env[0].name; }],
  ["Service", "port as a string", (d) => { d.spec.ports[0].port = "8080"; }],
  ["NetworkPolicy", "ingress rule with an unknown key", (d) => { d.spec.ingress[0].sources = d.spec.ingress[0].from; }],
  ["HorizontalPodAutoscaler", "autoscaling/v1 field in v2", (d) => { d.spec.targetCPUUtilizationPercentage = 70; }],
  ["PodDisruptionBudget", "wrong apiVersion", (d) => { d.apiVersion = "policy/v1beta2"; }],
  ["Kustomization", "unknown key", (d) => { d.resource = d.resources; }],
  ["Deployment", "replicas not an integer", (d) => { d.spec.replicas = 1.5; }],
  ["Service", "port beyond int32", (d) => { d.spec.ports[0].port = 2 ** 31; }],
];
let selfTests = 0;
for (const [kind, what, mutate] of mutations) {
  const original = find(kind);
  if (!original) continue;
  const doc = clone(original);
  try {
    mutate(doc);
  } catch (e) {
    continue; // the manifest no longer has the field this mutation breaks
  }
  addUnit(`(self-test)`, `broken ${kind}: ${what}`, doc, true);
  selfTests++;
}

// --------------------------------------------------------- type checking

const virtual = new Map(units.filter((u) => u.source).map((u) => [u.name, u.source]));
virtual.set(path.join(HERE, ".virtual", "kustomization-fields.ts"), KUSTOMIZATION_TS);
const options = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  types: [],
  noLib: false,
};
const host = ts.createCompilerHost(options);
const getSourceFile = host.getSourceFile.bind(host);
const fileExists = host.fileExists.bind(host);
const readFile = host.readFile.bind(host);
host.getSourceFile = (f, lang, ...rest) =>
  virtual.has(f) ? ts.createSourceFile(f, virtual.get(f), lang, true) : getSourceFile(f, lang, ...rest);
host.fileExists = (f) => virtual.has(f) || fileExists(f);
host.readFile = (f) => (virtual.has(f) ? virtual.get(f) : readFile(f));
const VIRTUAL_DIR = path.join(HERE, ".virtual"); // exists only in memory
const directoryExists = host.directoryExists ? host.directoryExists.bind(host) : fs.existsSync;
host.directoryExists = (d) => d === VIRTUAL_DIR || directoryExists(d);
const program = ts.createProgram([...virtual.keys()], options, host);
const byName = new Map(units.filter((u) => u.name).map((u) => [u.name, u]));
for (const d of ts.getPreEmitDiagnostics(program)) {
  const msg = ts.flattenDiagnosticMessageText(d.messageText, "\n  ");
  const unit = d.file && byName.get(d.file.fileName);
  if (!unit) {
    console.error(`validate_k8s: ${d.file ? d.file.fileName + ": " : ""}${msg}`);
    process.exitCode = 1;
    continue;
  }
  const line = d.file.getLineAndCharacterOfPosition(d.start).line - unit.header;
  const at = line >= 0 && unit.lines[line] ? unit.lines[line].path || "(document)" : "(document)";
  unit.errors.push(`${at}: ${msg}`);
}

// ------------------------------------- OpenAPI schemas (kubernetes-models)

for (const u of units.filter((u) => u.doc)) {
  const { apiVersion, kind } = u.doc;
  let Model;
  try {
    Model = (await import(`kubernetes-models/${apiVersion}`))[kind]; // "v1" is the core group
  } catch (e) {
    Model = undefined;
  }
  if (typeof Model !== "function") {
    u.errors.push(`no OpenAPI schema for ${apiVersion} ${kind} in kubernetes-models ${modelsVersion}`);
    continue;
  }
  try {
    new Model(clone(u.doc)).validate();
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    for (const err of e.errors) {
      const at = err.instancePath.replace(/^\//, "").replace(/\/(\d+)(?=\/|$)/g, "[$1]").replace(/\//g, ".");
      u.errors.push(`${at || "(document)"}: ${err.message} (OpenAPI schema)`);
    }
  }
}

// ----------------------------------------------------------------- report

let passed = 0;
let failed = 0;
for (const u of units.filter((u) => !u.expectFail)) {
  if (u.errors.length === 0) {
    passed++;
    console.log(`ok    ${rel(path.dirname(u.file))}/${u.label}`);
  } else {
    failed++;
    console.log(`FAIL  ${rel(path.dirname(u.file))}/${u.label}`);
    for (const e of u.errors) console.log(`        ${e.replace(/\n/g, "\n        ")}`);
  }
}
for (const u of units.filter((u) => u.expectFail)) {
  if (u.errors.length > 0) {
    passed++;
    console.log(`ok    self-test: ${u.label}: rejected (${u.errors[0].split("\n")[0].slice(0, 110)})`);
  } else {
    failed++;
    console.log(`FAIL  self-test: ${u.label}: ACCEPTED, the validator checks nothing there`);
  }
}
console.log(`k8s manifests: ${units.length - selfTests} documents in ${files.length} files against ` +
            `kubernetes-types ${TYPES_VERSION} (Kubernetes ${TYPES_VERSION.replace(/\.\d+$/, "")} OpenAPI), ` +
            `TypeScript ${ts.version}, and kubernetes-models ${modelsVersion} (Kubernetes 1.27 OpenAPI ` +
            `schemas); ${selfTests} broken copies`);
console.log(`${passed} passed, ${failed} failed`);
if (failed > 0) process.exitCode = 1;
