package dlbridge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The documentation check of issue #35: every exported identifier of the package has a doc
// comment, and every exported function an Example or a mention in docs/go.md. It reads the
// package's source with go/parser, so it checks what godoc shows.
//
// The rule, precisely:
//   - Identifiers: the exported top-level functions, types, constants and variables of the
//     package's non-test files, the exported methods of exported types, and the exported fields
//     of exported struct types. A function or type has a doc comment right above it; a constant,
//     variable or type in a parenthesised group has its own doc comment, a comment at the end of
//     its line, or the group's doc comment; a field has a doc comment or a comment at the end of
//     its line. A comment that is only blank does not count.
//   - Functions (top-level, and methods of exported types): an Example in the package's test
//     files by godoc's naming (ExampleF, ExampleT_M, each optionally followed by _suffix), or a
//     mention in docs/go.md: the name (the method's name, for a method) as a whole identifier
//     inside the page's code (a `code span` or a fenced block).
// TestDocCheckTeeth shows that the check fails, naming the identifier, when one doc comment,
// one Example or one function's mentions are taken away.

const docPage = "../../docs/go.md"

// docCheck returns what the Go package in dir leaves undocumented, one line per finding.
func docCheck(dir, page string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files, tests []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, "_test.go") {
			tests = append(tests, f)
		} else {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return []string{"no Go files in " + dir}, nil
	}
	text, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	code := pageCode(string(text))

	var examples []string
	for _, f := range tests {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				examples = append(examples, fn.Name.Name)
			}
		}
	}

	var found []string
	report := func(pos token.Pos, format string, name string) {
		p := fset.Position(pos)
		found = append(found, filepath.Base(p.Filename)+":"+itoa(p.Line)+": "+name+": "+format)
	}
	documented := func(groups ...*ast.CommentGroup) bool {
		for _, g := range groups {
			if g != nil && strings.TrimSpace(g.Text()) != "" {
				return true
			}
		}
		return false
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if !ast.IsExported(name) {
					continue
				}
				key, method := name, name
				if d.Recv != nil {
					recv := receiverType(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					key = recv + "." + name
				}
				if !documented(d.Doc) {
					report(d.Pos(), "exported function has no doc comment", key)
				}
				if !hasExample(examples, strings.ReplaceAll(key, ".", "_")) && !mentioned(code, method) {
					report(d.Pos(), "no Example and no mention in docs/go.md", key)
				}
			case *ast.GenDecl:
				grouped := d.Lparen.IsValid()
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !ast.IsExported(s.Name.Name) {
							continue
						}
						ok := documented(s.Doc, s.Comment)
						if !ok && (!grouped || documented(d.Doc)) {
							ok = documented(d.Doc)
						}
						if !ok {
							report(s.Pos(), "exported type has no doc comment", s.Name.Name)
						}
						if st, isStruct := s.Type.(*ast.StructType); isStruct {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									if ast.IsExported(n.Name) && !documented(field.Doc, field.Comment) {
										report(n.Pos(), "exported field has no comment", s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if ast.IsExported(n.Name) && !documented(s.Doc, s.Comment, d.Doc) {
								report(n.Pos(), "exported "+d.Tok.String()+" has no doc comment", n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(found)
	return found, nil
}

// receiverType is the name of a method's receiver type (T for T, *T, T[E] and *T[E]).
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// hasExample reports whether examples holds godoc's Example for name (F or T_M): ExampleName
// or ExampleName_suffix with a suffix that starts with a lower-case letter.
func hasExample(examples []string, name string) bool {
	for _, e := range examples {
		if !strings.HasPrefix(e, "Example"+name) {
			continue
		}
		rest := strings.TrimPrefix(e, "Example"+name)
		if rest == "" {
			return true
		}
		if strings.HasPrefix(rest, "_") {
			r, _ := utf8.DecodeRuneInString(rest[1:])
			if unicode.IsLower(r) {
				return true
			}
		}
	}
	return false
}

var fence = regexp.MustCompile("(?s)(?m)^```[^\n]*\n.*?^```")
var span = regexp.MustCompile("`[^`\n]+`")

// pageCode is the code of a Markdown page: its fenced blocks and its code spans.
func pageCode(text string) string {
	var b strings.Builder
	for _, block := range fence.FindAllString(text, -1) {
		b.WriteString(block)
		b.WriteByte('\n')
	}
	for _, s := range span.FindAllString(fence.ReplaceAllString(text, ""), -1) {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// mentioned reports whether name occurs in code as a whole identifier.
func mentioned(code, name string) bool {
	return regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(name) + `($|[^\w])`).MatchString(code)
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var digits []byte
	for ; v > 0; v /= 10 {
		digits = append([]byte{byte('0' + v%10)}, digits...)
	}
	return string(digits)
}

func TestDocCheck(t *testing.T) {
	found, err := docCheck(".", docPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// copyPackage copies the package's Go files and docs/go.md into a temporary folder, and
// returns the folder and the page's copy.
func copyPackage(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		data, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page, err := os.ReadFile(docPage)
	if err != nil {
		t.Fatal(err)
	}
	pagePath := filepath.Join(dir, "go.md")
	if err := os.WriteFile(pagePath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, pagePath
}

// edit rewrites a file of the copy, failing the test when the change does nothing.
func edit(t *testing.T, path string, change func(string) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := change(string(data))
	if changed == string(data) {
		t.Fatalf("the edit of %s changed nothing", path)
	}
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectFinding runs the check on the copy and wants findings that all say what, one of them
// about name.
func expectFinding(t *testing.T, dir, page, name, what string) {
	t.Helper()
	found, err := docCheck(dir, page)
	if err != nil {
		t.Fatal(err)
	}
	named := ""
	for _, f := range found {
		if !strings.HasSuffix(f, ": "+what) {
			t.Fatalf("want only findings %q, got %q", what, found)
		}
		if strings.HasSuffix(f, ": "+name+": "+what) {
			named = f
		}
	}
	if named == "" {
		t.Fatalf("want a finding %q about %s, got %q", what, name, found)
	}
	t.Logf("the check fails as it should (%d findings): %s", len(found), named)
}

func TestDocCheckTeeth(t *testing.T) {
	if found, err := docCheck(".", docPage); err != nil || len(found) != 0 {
		t.Skip("TestDocCheck fails already")
	}

	t.Run("doc comment of a function", func(t *testing.T) {
		dir, page := copyPackage(t)
		edit(t, filepath.Join(dir, "tensor.go"), func(s string) string {
			return regexp.MustCompile(`(?m)^// Version .*\n(//.*\n)*(func Version\()`).ReplaceAllString(s, "$2")
		})
		expectFinding(t, dir, page, "Version", "exported function has no doc comment")
	})

	t.Run("doc comment of a method", func(t *testing.T) {
		dir, page := copyPackage(t)
		edit(t, filepath.Join(dir, "tensor.go"), func(s string) string {
			return regexp.MustCompile(`(?m)^// ShareReadOnly .*\n(//.*\n)*(func \(t \*Tensor\) ShareReadOnly\()`).ReplaceAllString(s, "$2")
		})
		expectFinding(t, dir, page, "Tensor.ShareReadOnly", "exported function has no doc comment")
	})

	t.Run("doc comment of a group of constants", func(t *testing.T) {
		dir, page := copyPackage(t)
		edit(t, filepath.Join(dir, "device.go"), func(s string) string {
			return regexp.MustCompile(`(?m)^// Every device type of DLPack's header.*\n(//.*\n)*(const \()`).ReplaceAllString(s, "$2")
		})
		expectFinding(t, dir, page, "DeviceTypeCPU", "exported const has no doc comment")
	})

	t.Run("comment of a struct field", func(t *testing.T) {
		dir, page := copyPackage(t)
		edit(t, filepath.Join(dir, "errors.go"), func(s string) string {
			return regexp.MustCompile(`(?m)^(\tMessage +string).*$`).ReplaceAllString(s, "$1")
		})
		expectFinding(t, dir, page, "Error.Message", "exported field has no comment")
	})

	t.Run("the Example and the mentions of a function", func(t *testing.T) {
		dir, page := copyPackage(t)
		// Version has an Example and mentions: renaming the one and scrubbing the others
		// leaves it with neither.
		edit(t, filepath.Join(dir, "example_test.go"), func(s string) string {
			return strings.ReplaceAll(s, "func ExampleVersion(", "func exampleGone(")
		})
		edit(t, page, func(s string) string {
			return regexp.MustCompile(`\bVersion\b`).ReplaceAllString(s, "Scrubbed")
		})
		expectFinding(t, dir, page, "Version", "no Example and no mention in docs/go.md")
	})
}
