// `helm dependency build` for the dependencies this repository uses: a `file://` repository (a
// chart directory relative to the chart) is packaged into charts/<name>-<version>.tgz, after
// checking its version against the constraint in Chart.yaml. Other repositories are refused.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

func dependencyBuild(dir string) error {
	files, err := readDirFiles(dir)
	if err != nil {
		return err
	}
	ch, err := loadChart(files, "")
	if err != nil {
		return err
	}
	deps, err := ch.dependencies()
	if err != nil {
		return err
	}
	for _, d := range deps {
		if !strings.HasPrefix(d.Repository, "file://") {
			return fmt.Errorf("dependency %s: only file:// repositories are supported here, not %q", d.Name, d.Repository)
		}
		src := filepath.Join(dir, strings.TrimPrefix(d.Repository, "file://"))
		subFiles, err := readDirFiles(src)
		if err != nil {
			return fmt.Errorf("dependency %s: %v", d.Name, err)
		}
		sub, err := loadChart(subFiles, "")
		if err != nil {
			return err
		}
		if sub.meta.Name != d.Name {
			return fmt.Errorf("dependency %s: %s holds chart %q", d.Name, src, sub.meta.Name)
		}
		c, err := semver.NewConstraint(d.Version)
		if err != nil {
			return fmt.Errorf("dependency %s: version %q: %v", d.Name, d.Version, err)
		}
		v, _ := semver.NewVersion(sub.meta.Version)
		if !c.Check(v) {
			return fmt.Errorf("dependency %s: %s is version %s, Chart.yaml asks for %s", d.Name, src, sub.meta.Version, d.Version)
		}
		archive, err := packageChart(d.Name, subFiles)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
			return err
		}
		// Written aside and renamed: a concurrent render sees the old archive or the new, never half.
		target := filepath.Join(dir, "charts", fmt.Sprintf("%s-%s.tgz", d.Name, sub.meta.Version))
		tmp, err := os.CreateTemp(filepath.Join(dir, "charts"), ".build-*")
		if err != nil {
			return err
		}
		if _, err := tmp.Write(archive); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return err
		}
		tmp.Close()
		if err := os.Rename(tmp.Name(), target); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

// packageChart is `helm package`'s layout: <name>/<file>, gzip'd tar (no timestamps: reproducible).
func packageChart(name string, files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, "charts/") {
			continue
		}
		h := &tar.Header{Name: name + "/" + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
