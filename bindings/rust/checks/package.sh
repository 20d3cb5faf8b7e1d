#!/usr/bin/env bash
# Suite rust, test rust-package: both crates are complete packages.
#  1. `cargo package --list` of each crate lists Cargo.toml, LICENSE, README.md, build.rs and
#     every .rs file of its src/, tests/ and examples/, and prints no warning (cargo warns when
#     description, license, documentation, homepage or repository is missing).
#  2. The manifest metadata a registry shows is complete: description, license (Apache-2.0),
#     repository, homepage, documentation, readme, keywords, categories.
#  3. `cargo package` makes both .crate files and verifies them (builds each from its unpacked
#     package, against the install DLBRIDGE_PC names); the LICENSE inside each .crate is
#     byte-for-byte the repository's LICENSE, and its README.md is the crate's.
# Usage: package.sh SOURCE_DIR WORK_DIR (cargo is $CARGO; DLBRIDGE_PC etc. from the environment).
set -uo pipefail
source=$(cd "$1" && pwd)
work=$2
cargo=${CARGO:-cargo}
rust="$source/bindings/rust"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

rm -rf "$work"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"
# Verification unpacks dlbridge-sys from a temporary registry into CARGO_HOME's registry/src,
# and cargo never unpacks the same name and version there twice: with the user's CARGO_HOME a
# copy left by an earlier run (the same version, older sources) would be built instead of this
# one. The crates have no dependencies, so a private, empty CARGO_HOME serves.
export CARGO_HOME="$work/cargo-home"

for crate in dlbridge-sys dlbridge; do
  dir="$rust/$crate"
  if ! "$cargo" package --list --offline --allow-dirty --no-verify \
       --manifest-path "$rust/Cargo.toml" -p "$crate" >"$work/$crate.list" 2>"$work/$crate.err"; then
    cat "$work/$crate.err"
    fail "$crate: cargo package --list failed"
    continue
  fi
  if grep -i 'warning' "$work/$crate.err"; then
    fail "$crate: cargo package --list warns (above)"
  fi
  needed=(Cargo.toml LICENSE README.md build.rs)
  while IFS= read -r f; do
    needed+=("${f#"$dir"/}")
  done < <(find "$dir/src" "$dir/tests" "$dir/examples" -name '*.rs' 2>/dev/null | sort)
  for f in "${needed[@]}"; do
    grep -qxF "$f" "$work/$crate.list" || fail "$crate: the package lacks $f"
  done
  echo "$crate: ${#needed[@]} needed files listed: ${needed[*]}"
done

# 2. The metadata, as cargo reads it.
"$cargo" metadata --offline --no-deps --format-version 1 --manifest-path "$rust/Cargo.toml" \
  >"$work/metadata.json" || fail "cargo metadata failed"
python3 - "$work/metadata.json" <<'EOF' || failures=$((failures + 1))
import json, sys
packages = {p["name"]: p for p in json.load(open(sys.argv[1]))["packages"]}
bad = 0
for name in ("dlbridge-sys", "dlbridge"):
    p = packages[name]
    for field in ("description", "license", "repository", "homepage", "documentation", "readme"):
        if not p.get(field):
            print(f"FAIL: {name}: no {field}"); bad += 1
    for field in ("keywords", "categories"):
        if not p.get(field):
            print(f"FAIL: {name}: no {field}"); bad += 1
    if p.get("license") != "Apache-2.0":
        print(f"FAIL: {name}: license is {p.get('license')!r}, not Apache-2.0"); bad += 1
    if p.get("documentation") != f"https://docs.rs/{name}":
        print(f"FAIL: {name}: documentation is {p.get('documentation')!r}"); bad += 1
    print(f"{name}: license {p['license']}, readme {p['readme']}, {p['documentation']}")
sys.exit(1 if bad else 0)
EOF

# 3. The .crate files, verified, and what they hold.
if "$cargo" package --offline --allow-dirty --manifest-path "$rust/Cargo.toml" \
     -p dlbridge-sys -p dlbridge >"$work/package.log" 2>&1; then
  version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$rust/Cargo.toml" | head -n 1)
  for crate in dlbridge-sys dlbridge; do
    file="$CARGO_TARGET_DIR/package/$crate-$version.crate"
    mkdir -p "$work/unpacked"
    if ! tar xzf "$file" -C "$work/unpacked"; then
      fail "$crate: cannot unpack $file"
      continue
    fi
    unpacked="$work/unpacked/$crate-$version"
    if [[ ! -f "$unpacked/LICENSE" ]]; then
      fail "$crate: no LICENSE in $(basename "$file")"
      continue
    fi
    cmp "$unpacked/LICENSE" "$source/LICENSE" || fail "$crate: the .crate's LICENSE is not the repository's"
    cmp "$unpacked/README.md" "$rust/$crate/README.md" || fail "$crate: the .crate's README.md differs"
    [[ -L "$unpacked/LICENSE" ]] && fail "$crate: LICENSE is a link inside the .crate"
    grep -qx 'license = "Apache-2.0"' "$unpacked/Cargo.toml" || fail "$crate: the packaged Cargo.toml has no license"
    echo "$crate: $(basename "$file") holds LICENSE ($(wc -c <"$unpacked/LICENSE") bytes, the repository's) and README.md"
  done
else
  cat "$work/package.log"
  fail "cargo package (with verification) failed"
fi

if (( failures )); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "both crates package with LICENSE, README.md, their sources and complete metadata"
