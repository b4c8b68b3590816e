// MathJax 3 configuration for pymdownx.arithmatex (generic mode): typeset only the spans and
// divs arithmatex marks. The MathJax script itself is served with the site
// (docs/assets/mathjax/, loaded after this file by mkdocs.yml): no page needs a CDN.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};
