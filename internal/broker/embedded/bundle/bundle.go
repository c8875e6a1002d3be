package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// DefaultMaxBytes bounds the files of one bundle (they are kept in the store).
const DefaultMaxBytes = 1 << 20

// File is one file of a bundle.
type File struct {
	Executable bool   `json:"executable,omitempty"`
	Data       []byte `json:"data"`
}

// Bundle is a manifest and the files its actions need, self-contained.
type Bundle struct {
	Manifest Manifest `json:"manifest"`
	// Files maps slash-separated paths relative to the bundle root to
	// their content.
	Files map[string]File `json:"files,omitempty"`
	// Actions is the resolved program of every action (a file path in
	// Files, or a built-in).
	Actions map[Action]string `json:"actions"`
	// Digest identifies manifest and files.
	Digest string `json:"digest"`
	// Source is where its registry found it (directory name, image tag);
	// it is not part of the digest.
	Source string `json:"source,omitempty"`
}

// LoadDir reads a bundle directory: its bundle.json and every regular file
// under it (at most maxBytes in all; zero means DefaultMaxBytes).
func LoadDir(dir string, maxBytes int64) (*Bundle, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	files, err := readFiles(dir, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	b, err := Assemble(*m, files)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	return b, nil
}

// FromManifest builds a bundle from a manifest held elsewhere (an OCI image
// label) and the files of filesDir, which may be empty when every action
// is a built-in.
func FromManifest(raw []byte, filesDir string, maxBytes int64) (*Bundle, error) {
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	files := map[string]File{}
	if filesDir != "" {
		if files, err = readFiles(filesDir, maxBytes); err != nil {
			return nil, fmt.Errorf("bundle %q: read its actions directory: %w", m.Name, err)
		}
	}
	return Assemble(*m, files)
}

// Assemble resolves the actions of a manifest against files and computes
// the digest.
func Assemble(m Manifest, files map[string]File) (*Bundle, error) {
	if files == nil {
		files = map[string]File{}
	}
	actions := map[Action]string{}
	var errs []error
	for _, a := range Actions {
		prog, declared := m.Actions[a]
		if !declared {
			conventional := "actions/" + string(a)
			if _, ok := files[conventional]; ok {
				prog = conventional
			} else {
				prog = Noop
			}
		}
		switch {
		case IsBuiltin(prog):
			if !knownBuiltin(prog) {
				errs = append(errs, fmt.Errorf("action %s: unknown built-in %q (known: %s, %s)", a, prog, Noop, Echo))
			}
		default:
			clean := path.Clean(prog)
			if path.IsAbs(clean) || clean == ".." || len(clean) > 2 && clean[:3] == "../" {
				errs = append(errs, fmt.Errorf("action %s: program %q must be a path inside the bundle", a, prog))
				break
			}
			f, ok := files[clean]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("action %s: program %q is not a file of the bundle", a, prog))
			case !f.Executable:
				errs = append(errs, fmt.Errorf("action %s: program %q is not executable (chmod +x it)", a, prog))
			}
			prog = clean
		}
		actions[a] = prog
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("bundle %q: %w", m.Name, errors.Join(errs...))
	}
	b := &Bundle{Manifest: m, Files: files, Actions: actions}
	digest, err := b.digest()
	if err != nil {
		return nil, err
	}
	b.Digest = digest
	return b, nil
}

func (b *Bundle) digest() (string, error) {
	// encoding/json writes map keys sorted, so this is deterministic.
	raw, err := json.Marshal(struct {
		Manifest Manifest        `json:"manifest"`
		Files    map[string]File `json:"files"`
		Actions  map[Action]string
	}{b.Manifest, b.Files, b.Actions})
	if err != nil {
		return "", fmt.Errorf("bundle %q: digest: %w", b.Manifest.Name, err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func readFiles(dir string, maxBytes int64) (map[string]File, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	files := map[string]File{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (symbolic links and devices are not supported in bundles)", rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if total > maxBytes {
			return fmt.Errorf("the bundle's files exceed %d bytes", maxBytes)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = File{Executable: info.Mode()&0o111 != 0, Data: data}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
