// Command krew packs kubectl-lockstep for krew, kubectl's plugin manager
// (`make krew VERSION=v0.1.0`): it builds the plugin for every platform
// of the manifest template plugins/lockstep.yaml, packs each into an
// archive in the output directory (tar.gz, zip for Windows), and writes
// the manifest with the version and each archive's address and SHA-256
// beside them (dist/lockstep.yaml). Upload the archives to the release
// named VERSION, then submit the manifest to the krew index (or install
// from it: kubectl krew install --manifest=dist/lockstep.yaml
// --archive=dist/kubectl-lockstep_VERSION_linux_amd64.tar.gz).
//
// The archives are reproducible: the same commit and Go version give the
// same bytes (-trimpath, no build ids, fixed times and modes).
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// platform is one os/arch krew users run.
type platform struct {
	OS, Arch string
}

// platforms are the ones the manifest offers.
var platforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

// bin is the plugin's executable on a platform.
func (p platform) bin() string {
	if p.OS == "windows" {
		return "kubectl-lockstep.exe"
	}
	return "kubectl-lockstep"
}

// archive is the name of a platform's archive.
func (p platform) archive(version string) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-lockstep_%s_%s_%s%s", version, p.OS, p.Arch, ext)
}

// release is where the archives of a version are downloaded from.
const release = "https://github.com/lockstep-dev/lockstep/releases/download"

func main() {
	version := flag.String("version", "", "the version to pack (vMAJOR.MINOR.PATCH)")
	out := flag.String("out", "dist", "where the archives and the manifest go")
	manifest := flag.String("manifest", filepath.Join("plugins", "lockstep.yaml"), "the krew manifest's template")
	flag.Parse()
	if err := pack(*version, *out, *manifest); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func pack(version, out, manifest string) error {
	if !strings.HasPrefix(version, "v") {
		return fmt.Errorf("-version %q: a version is vMAJOR.MINOR.PATCH (make krew VERSION=v0.1.0)", version)
	}
	tmpl, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sums := map[platform]string{}
	for _, p := range platforms {
		fmt.Fprintf(os.Stderr, "krew: building kubectl-lockstep %s for %s/%s\n", version, p.OS, p.Arch)
		exe, err := build(p, version)
		if err != nil {
			return err
		}
		data, err := archive(p, exe)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, p.archive(version)), data, 0o644); err != nil {
			return err
		}
		sums[p] = sha256Of(data)
	}
	text, err := render(string(tmpl), version, sums)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, filepath.Base(manifest)), text, 0o644)
}

// build compiles the plugin for p and returns the executable.
func build(p platform, version string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kubectl-lockstep-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, p.bin())
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X github.com/lockstep-dev/lockstep/internal/plugin.Version="+version,
		"-o", exe, "./cmd/kubectl-lockstep")
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building for %s/%s: %w", p.OS, p.Arch, err)
	}
	return os.ReadFile(exe)
}

// epoch is the time of every file in an archive, so that the same
// executable always makes the same archive.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// archive packs the executable as p.bin() into a tar.gz, or a zip for
// Windows.
func archive(p platform, exe []byte) ([]byte, error) {
	var b bytes.Buffer
	if p.OS == "windows" {
		z := zip.NewWriter(&b)
		h := &zip.FileHeader{Name: p.bin(), Method: zip.Deflate, Modified: epoch}
		h.SetMode(0o755)
		w, err := z.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(exe); err != nil {
			return nil, err
		}
		if err := z.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	gz, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	gz.ModTime = epoch
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: p.bin(), Mode: 0o755, Size: int64(len(exe)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := io.Copy(tw, bytes.NewReader(exe)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sha256Of is the hex SHA-256 of an archive, as krew checks it.
func sha256Of(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// render fills the manifest template for version: {{ .Version }}, and for
// each platform {{ uri "os" "arch" }} and {{ sha256 "os" "arch" }} from
// the archives' sums. A platform the template names and no archive was
// made for is an error.
func render(tmpl, version string, sums map[platform]string) ([]byte, error) {
	funcs := template.FuncMap{
		"uri": func(os, arch string) string {
			return release + "/" + version + "/" + platform{os, arch}.archive(version)
		},
		"sha256": func(os, arch string) (string, error) {
			sum, ok := sums[platform{os, arch}]
			if !ok {
				return "", fmt.Errorf("no archive for %s/%s: add it to hack/krew's platforms", os, arch)
			}
			return sum, nil
		},
	}
	t, err := template.New("manifest").Funcs(funcs).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct{ Version string }{version}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
