// Package docs checks the project's documents (the README, the pages under
// docs/ and every other Markdown file of the repository): they link only to
// files and headings that exist in the repository, and show no path of the
// machine their sample outputs were taken on. Its tests need no control
// plane.
package docs
