package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lockstep-dev/lockstep/internal/broker/embedded/bundle"
)

// materialize writes the bundle's files to <root>/<digest> once and returns
// that directory. Writing goes to a temporary directory renamed into place,
// so a reader never sees half a bundle, even across processes. Every user
// may read the files (and run the executables): actions run as users of
// their own; a bundle is the same for every instance and holds no
// secret.
func materialize(root string, b *bundle.Bundle) (string, error) {
	dir := filepath.Join(root, b.Digest)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("create bundle cache %s: %w", root, err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("create bundle cache entry: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for name, f := range b.Files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := mkdirs(tmp, filepath.Dir(p)); err != nil {
			return "", fmt.Errorf("write bundle %q file %s: %w", b.Manifest.Name, name, err)
		}
		mode := fs.FileMode(0o644)
		if f.Executable {
			mode = 0o755
		}
		if err := writeFile(p, f.Data, mode); err != nil {
			return "", fmt.Errorf("write bundle %q file %s: %w", b.Manifest.Name, name, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("write bundle %q: %w", b.Manifest.Name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return dir, nil // another writer won the race with the same content
		}
		return "", fmt.Errorf("write bundle %q to %s: %w", b.Manifest.Name, dir, errors.Join(err))
	}
	return dir, nil
}

// mkdirs creates dir and the directories above it up to root, each 0755.
func mkdirs(root, dir string) error {
	if dir == root {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := mkdirs(root, filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o755)
}
