// A form generated from a JSON Schema object (the flat parameter models of the scenario actions):
// numbers, integers, strings, enums, booleans and nullable fields ("anyOf" with null), with their
// defaults, bounds and descriptions. Fields named in `choices` (server, camera) are a select of the
// values the twin has; fields named in `suggest` (device, metric...) get a list of known values to
// pick from, and still take any text.
import {h} from "./ui.js";

let lists = 0;

function resolve(prop) {
  if (!prop.anyOf) return {spec: prop, nullable: false};
  const other = prop.anyOf.find((p) => p.type !== "null") || {};
  return {spec: {...other, ...prop, anyOf: undefined}, nullable: prop.anyOf.some((p) => p.type === "null")};
}

function bounds(spec) {
  const min = spec.minimum ?? spec.exclusiveMinimum, max = spec.maximum ?? spec.exclusiveMaximum;
  const parts = [];
  if (spec.minimum !== undefined) parts.push(`≥ ${spec.minimum}`);
  if (spec.exclusiveMinimum !== undefined) parts.push(`> ${spec.exclusiveMinimum}`);
  if (spec.maximum !== undefined) parts.push(`≤ ${spec.maximum}`);
  if (spec.exclusiveMaximum !== undefined) parts.push(`< ${spec.exclusiveMaximum}`);
  return {min, max, text: parts.join(", ")};
}

function field(name, prop, required, suggest, choices) {
  const {spec, nullable} = resolve(prop);
  const id = `f-${name}-${++lists}`;
  const hint = [spec.description, bounds(spec).text, nullable ? "blank: none" : ""].filter(Boolean).join(" · ");
  let input, read, extra = null;
  const among = spec.enum || choices[name];
  if (among) {
    const pick = required && spec.default === undefined ? h("option", {value: "", disabled: true}, "(choose)") : null;
    input = h("select", {id, name}, pick, !required && !choices[name] ? h("option", {value: ""}, "(default)") : null,
      among.map((v) => h("option", {value: v}, v)));
    input.value = spec.default !== undefined && among.includes(spec.default) ? spec.default : (pick ? "" : input.value);
    read = () => input.value || undefined;
  } else if (spec.type === "boolean") {
    input = h("input", {id, name, type: "checkbox", checked: Boolean(spec.default)});
    read = () => input.checked;
  } else if (spec.type === "integer" || spec.type === "number") {
    const {min, max} = bounds(spec);
    input = h("input", {id, name, type: "number", step: spec.type === "integer" ? "1" : "any", class: "num",
                        min, max, value: spec.default ?? ""});
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else {
    const options = suggest[name];
    const listId = options ? `${id}-list` : undefined;
    input = h("input", {id, name, type: "text", list: listId, value: spec.default ?? "", pattern: spec.pattern});
    if (options) extra = h("datalist", {id: listId}, options.map((v) => h("option", {value: v})));
    read = () => (input.value === "" ? undefined : input.value);
  }
  const label = h("label", {for: id}, name, required ? h("span", {class: "req"}, " *") : null);
  const row = h("div", {class: "field"}, label,
    h("span", {}, input, extra, hint ? h("small", {class: "muted"}, " ", hint) : null));
  return {name, row, read, required};
}

// The form's element, and value() giving the parameters entered (blank optional fields left out, so
// the server's defaults apply).
export function schemaForm(schema, suggest = {}, choices = {}) {
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, prop]) =>
    field(name, prop, required.has(name), suggest, choices));
  const el = h("div", {class: "schemaform"},
    fields.length ? fields.map((f) => f.row) : h("div", {class: "muted"}, "no parameters"));
  const value = () => {
    const out = {};
    for (const f of fields) {
      const v = f.read();
      if (v !== undefined) out[f.name] = v;
    }
    return out;
  };
  return {el, value};
}
