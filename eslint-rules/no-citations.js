// Comments explain the code on their own. A pointer to an issue number or to a section of a product
// document that is not in the repository tells a reader nothing, and goes stale as those move: say the
// reason, or the figure and how to reproduce it, in the comment itself (docs/ files of the repository may
// be named).
const CITATION = /\bissue\s+#?\d+\b|\bSPEC\s*§|\bSPEC\.md\b/i;

/** A comment that cites an issue number or the product SPEC instead of explaining. */
const rule = {
  meta: {
    type: 'suggestion',
    docs: { description: 'Comments explain on their own: no "issue N", "SPEC §" or SPEC.md citations.' },
    schema: [],
    messages: { cited: 'This comment cites "{{cited}}": say the reason (or the figure and how to reproduce it) here instead.' },
  },
  create(context) {
    return {
      Program() {
        for (const comment of context.sourceCode.getAllComments()) {
          const m = CITATION.exec(comment.value);
          if (m) context.report({ loc: comment.loc, messageId: 'cited', data: { cited: m[0] } });
        }
      },
    };
  },
};

export default { rules: { 'no-citations': rule } };
