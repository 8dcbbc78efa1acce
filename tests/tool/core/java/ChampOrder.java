import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** Print the iteration order of Scala 2.13's immutable HashSet and HashMap for key sets read from stdin. */
public final class ChampOrder {
  public static void main(String[] args) throws Exception {
    HexFormat hex = HexFormat.of();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    StringBuilder out = new StringBuilder();
    String line;
    while ((line = in.readLine()) != null) {
      scala.collection.immutable.HashSet<String> set = scala.collection.immutable.HashSet$.MODULE$.empty();
      scala.collection.immutable.HashMap<String, String> map = scala.collection.immutable.HashMap$.MODULE$.empty();
      for (String item : line.split(" ")) {
        String key = new String(hex.parseHex(item), StandardCharsets.UTF_8);
        set = set.incl(key);
        map = map.updated(key, key);
      }
      StringBuilder setLine = new StringBuilder();
      scala.collection.Iterator<String> keys = set.iterator();
      while (keys.hasNext()) {
        setLine.append(hex.formatHex(keys.next().getBytes(StandardCharsets.UTF_8))).append(' ');
      }
      StringBuilder mapLine = new StringBuilder();
      scala.collection.Iterator<String> mapKeys = map.keysIterator();
      while (mapKeys.hasNext()) {
        mapLine.append(hex.formatHex(mapKeys.next().getBytes(StandardCharsets.UTF_8))).append(' ');
      }
      out.append(setLine.toString().trim()).append('\t').append(mapLine.toString().trim()).append('\n');
    }
    System.out.print(out);
  }
}
