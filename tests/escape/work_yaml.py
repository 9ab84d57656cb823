# escape: (workload) PyYAML round trip (safe_dump/safe_load), also through a file
# expect: pass
import yaml

data = {"name": "x", "list": [1, 2.5, None, True], "nested": {"a": {"b": ["c"]}}}
text = yaml.safe_dump(data, sort_keys=True)
assert yaml.safe_load(text) == data
with open("d.yaml", "w") as f:
    yaml.safe_dump_all([data, {"second": 2}], f)
with open("d.yaml") as f:
    docs = list(yaml.safe_load_all(f))
assert docs == [data, {"second": 2}]
print("PASS")
