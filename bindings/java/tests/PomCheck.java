import java.io.File;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks that a pom carries the metadata a published Maven artifact needs (the requirements of
 * Maven Central: coordinates, name, description, url, a license with name and url, a developer,
 * scm with connection, developerConnection and url) and that its version is given literally.
 * Run as a single-file program: {@code java PomCheck.java pom.xml}; prints each missing item
 * ("missing: scm/url") and exits 1 when one is missing, else prints "pom metadata complete".
 */
public final class PomCheck {
  private PomCheck() {}

  public static void main(String[] args) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(true);
    Document doc = f.newDocumentBuilder().parse(new File(args[0]));
    Element project = doc.getDocumentElement();
    List<String> missing = new ArrayList<>();
    String[] required = {
      "groupId", "artifactId", "version", "packaging", "name", "description", "url",
      "licenses/license/name", "licenses/license/url", "developers/developer/name",
      "scm/connection", "scm/developerConnection", "scm/url",
    };
    for (String path : required) {
      String value = text(project, path.split("/"), 0);
      if (value == null || value.isBlank()) {
        missing.add(path);
      }
    }
    String version = text(project, new String[] {"version"}, 0);
    if (version != null && version.contains("${")) {
      missing.add("version (a literal value, not " + version + ")");
    }
    for (String m : missing) {
      System.out.println("missing: " + m);
    }
    if (!missing.isEmpty()) {
      System.exit(1);
    }
    System.out.println("pom metadata complete");
  }

  /** The text of the first element at {@code path} below {@code e} (direct children only). */
  private static String text(Element e, String[] path, int i) {
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element && path[i].equals(n.getLocalName())) {
        String t = i + 1 == path.length ? n.getTextContent().strip()
            : text((Element) n, path, i + 1);
        if (t != null) {
          return t;
        }
      }
    }
    return null;
  }
}
