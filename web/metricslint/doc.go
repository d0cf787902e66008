// Package metricslint holds only tests: they register every jdwpaccel
// Prometheus metric the tree defines, lint them with promlint, and check
// them against METRICS.md. It is apart from package web so that a package
// under construction elsewhere does not stop the web tests from building.
package metricslint
