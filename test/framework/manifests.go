package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Render runs `kubectl kustomize deploy/<variant>` with the real kubectl
// and decodes the result.
func (cp *ControlPlane) Render(variant string) ([]*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Kubectl, "kustomize", filepath.Join(cp.Root, "deploy", variant))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize deploy/%s: %w\n%s", variant, err, stderr.String())
	}
	return Decode(stdout.String())
}

// Decode reads a stream of YAML documents (numbers as int64, as the API
// machinery reads them).
func Decode(manifests string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifests)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading rendered manifests: %w", err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding rendered manifests: %w", err)
		}
		objs = append(objs, u)
	}
}

// RuntimeEnv returns the Go runtime settings (GOGC, GOMEMLIMIT, ...) that
// the Deployment in rendered gives lockstep's container, as NAME=value:
// a process that runs lockstep as a deployment does gets them too.
func RuntimeEnv(rendered []*unstructured.Unstructured) ([]string, error) {
	for _, u := range rendered {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return nil, fmt.Errorf("reading the Deployment's containers: %w", err)
		}
		var env []string
		for _, c := range containers {
			vars, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
			for _, v := range vars {
				m, _ := v.(map[string]any)
				name, _ := m["name"].(string)
				value, literal := m["value"].(string)
				if literal && strings.HasPrefix(name, "GO") {
					env = append(env, name+"="+value)
				}
			}
		}
		return env, nil
	}
	return nil, errors.New("deploy/base renders no Deployment")
}
